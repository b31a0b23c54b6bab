// The colours of the groups a reader makes in the page (grouping by a setting), inlined into the report's page by
// zoo.report.html: the rule of zoo.report.colours, which colours the configurations, so a group has one colour
// wherever it is drawn. A key's 32-bit FNV-1a hash picks a slot of the palette; keys are placed in order of
// (hash, key), each in its slot or the next free one; past the palette's length, slots repeat.
"use strict";

const ZooPalette = (() => {
  function fnv1a(text) {
    let value = 0x811c9dc5;
    for (const byte of new TextEncoder().encode(text)) value = Math.imul(value ^ byte, 0x01000193) >>> 0;
    return value;
  }

  function palette(keys, colours) {  // Map key -> colour, a function of the set of keys
    const found = new Map(), taken = new Set();
    const placed = [...new Set(keys)].map(key => [fnv1a(key), key])
      .sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
    for (const [hash, key] of placed) {
      const slot = hash % colours.length;
      let free = slot;
      for (let k = 0; k < colours.length; k++) {
        if (!taken.has((slot + k) % colours.length)) {
          free = (slot + k) % colours.length;
          break;
        }
      }
      taken.add(free);
      if (taken.size === colours.length) taken.clear();
      found.set(key, colours[free]);
    }
    return found;
  }

  return {fnv1a, palette};
})();
