"""The ``scenes`` dataset: small images of coloured shapes with captions, drawn from a seed, no files needed.

It is the built-in default data for image captioning, made so that *attending
pays*: a caption says what is where, how many of a kind there are, and how the
things lie relative to each other, so a decoder that looks at the image's
feature grid word by word should clearly beat one that sees a single pooled
vector.

**Scenes.** An image (default 64 x 64 RGB) is split into a 3 x 3 grid of cells.
A scene puts 1-3 objects into distinct cells; each object has a shape (circle,
square, triangle, cross), a colour (red, green, blue, yellow, purple, white)
and a size (small, big), is jittered inside its cell and drawn in full inside
it, so objects never overlap or touch and the cell of every object can be read
off the pixels. The background is dark grey with a little per-pixel noise.
Objects of one kind (same shape, colour and size) form a *group*; scenes are
drawn with repeated kinds on purpose (two or three identical objects) so that
counting matters, and a second kind often differs from the first in one
attribute only (``a small red circle`` next to ``a big red circle``), so that
every attribute matters.

**Captions.** Lower-case words, no punctuation, about 40 words in all. A
caption is a function of the scene's *cells and kinds* (never of the jitter or
the noise), up to the choice of paraphrase:

* one object: its kind and its cell --
  ``a big green triangle in the top left``, ``a small blue cross on the right``,
  ``a big white circle in the middle``;
* one group of two or three: count, kind and the cells in reading order --
  ``two small red circles in the top left and at the bottom``;
* two groups: the relation between the groups' centres (cell coordinates):
  ``left of`` / ``right of`` when the columns differ more than the rows,
  ``above`` / ``below`` when the rows differ more, ``above and left of`` (etc.)
  on an exact diagonal, ``between`` when a single object sits exactly midway
  between a pair -- ``two small red circles left of a big blue square``,
  ``a big blue square between two small red circles``;
* three different objects: their order ``from left to right`` when their
  columns all differ, else ``from top to bottom`` when their rows all differ,
  else (an L shape) the corner object relative to the other two --
  ``a big red circle left of a small blue square and above a big green cross``.

The first reference of an item is the *canonical* caption (the first form of
the lists above; the object that is left or above comes first, the single
object before the pair it sits between). The other references are paraphrases
drawn from the same scene's variants: the other order (``a big blue square
right of two small red circles``), ``to the left of`` for ``left of``, ``there
is`` / ``there are`` openings, ``is`` / ``are`` sentences, the place fronted
(``in the top left there is ...``), ``corner`` after a corner cell, ``one ...
and one ...`` for the places of a group, ``from right to left`` reversed lists.
Every scene has at least :data:`MAX_REFERENCES` distinct captions.

**Determinism.** Item ``i`` of split ``s`` is drawn from
``random.Random(f"{seed}:{s}:{i}")`` (the noise from a PCG64 stream seeded from
it), so it depends on neither the other items nor the split sizes, and the
same config gives the same pixels on any machine. No two items of the whole
dataset have the same pixels (a clash, in practice never seen, is drawn again).
The *scenes* (cells and kinds) of different splits may coincide -- there are
only 432 one-object scenes -- just as real photos repeat their subjects.

Rendering is vectorised numpy over each object's bounding box: the default
2400 images take well under a second.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from dataclasses import dataclass

import numpy as np

from zoo.api import SPLITS, Dataset, ImageSource, Item, ZooError, at_least, between, must_be, register

# --------------------------------------------------------------------------- the world
SHAPES = ("circle", "square", "triangle", "cross")
PLURALS = {"circle": "circles", "square": "squares", "triangle": "triangles", "cross": "crosses"}
COLOURS = {
    "red": (225, 45, 40),
    "green": (45, 190, 65),
    "blue": (55, 95, 240),
    "yellow": (240, 215, 40),
    "purple": (165, 70, 215),
    "white": (235, 235, 235),
}
SIZES = ("small", "big")
#: Radius of an object, as a fraction of the cell side (an object spans at most 2 * radius).
RADIUS = {"small": 0.22, "big": 0.38}
GRID = 3  # cells per side
NUMBERS = {1: "a", 2: "two", 3: "three"}
MAX_OBJECTS = 3
MAX_REFERENCES = 5  # every scene has at least this many distinct captions
BACKGROUND = 28  # grey level of the background

# The place of one object, by (row, column): the canonical phrase, and whether it is a corner.
PLACES = {
    (0, 0): "in the top left",
    (0, 1): "at the top",
    (0, 2): "in the top right",
    (1, 0): "on the left",
    (1, 1): "in the middle",
    (1, 2): "on the right",
    (2, 0): "in the bottom left",
    (2, 1): "at the bottom",
    (2, 2): "in the bottom right",
}
CORNERS = {(0, 0), (0, 2), (2, 0), (2, 2)}


@dataclass(frozen=True)
class Thing:
    """One object of a scene: what it is and which grid cell it sits in (row 0 is the top)."""

    shape: str
    colour: str
    size: str
    row: int
    column: int

    def __post_init__(self) -> None:
        for field, value, allowed in (
            ("shape", self.shape, SHAPES),
            ("colour", self.colour, tuple(COLOURS)),
            ("size", self.size, SIZES),
            ("row", self.row, range(GRID)),
            ("column", self.column, range(GRID)),
        ):
            if value not in allowed:
                raise ValueError(f"{field}={value!r} must be one of {list(allowed)}")

    @property
    def kind(self) -> tuple[str, str, str]:
        return (self.shape, self.colour, self.size)

    @property
    def cell(self) -> tuple[int, int]:
        return (self.row, self.column)


class SceneError(ZooError, ValueError):
    """A layout that cannot be drawn or described (overlapping cells, too many objects)."""


# --------------------------------------------------------------------------- captions
def noun_phrase(kind: tuple[str, str, str], count: int) -> str:
    """``a big red circle``, ``two small blue crosses``."""
    shape, colour, size = kind
    return f"{NUMBERS[count]} {size} {colour} {shape if count == 1 else PLURALS[shape]}"


def _be(count: int) -> str:
    return "is" if count == 1 else "are"


def _listing(parts: list[str]) -> str:
    """``x and y``, ``x y and z`` (no commas: captions carry no punctuation)."""
    return " ".join(parts[:-1]) + " and " + parts[-1]


def _to_the(relation: str) -> str:
    """``left of`` -> ``to the left of``, ``above and right of`` -> ``above and to the right of``."""
    for side in ("left of", "right of"):
        if relation.endswith(side):
            return relation[: -len(side)] + "to the " + side
    return relation


def _reverse(rel: str) -> str:
    """The relation seen from the other side: ``above and left of`` -> ``below and right of``."""
    opposite = {"left": "right", "right": "left", "above": "below", "below": "above"}
    return " ".join(opposite.get(word, word) for word in rel.split())


def relation(a: tuple[float, float], b: tuple[float, float]) -> str:
    """Where centre ``a`` lies relative to centre ``b`` (rows, columns in cells): ``left of``, ``above``, ...

    The axis on which they differ more wins; an exact diagonal names both
    (``above and left of``); equal centres are ``between`` (a single object
    midway between a pair, the only way two groups can share a centre).
    """
    d_row, d_column = a[0] - b[0], a[1] - b[1]
    vertical = "above" if d_row < 0 else "below"
    horizontal = "left of" if d_column < 0 else "right of"
    if d_row == d_column == 0:
        return "between"
    if abs(d_column) > abs(d_row):
        return horizontal
    if abs(d_row) > abs(d_column):
        return vertical
    return f"{vertical} and {horizontal}"


def _groups(things: list[Thing]) -> list[tuple[tuple[str, str, str], list[tuple[int, int]]]]:
    """(kind, cells in reading order) per kind, in order of each kind's first cell in reading order."""
    cells: dict[tuple[str, str, str], list[tuple[int, int]]] = {}
    for thing in sorted(things, key=lambda t: t.cell):
        cells.setdefault(thing.kind, []).append(thing.cell)
    return list(cells.items())


def _centre(cells: list[tuple[int, int]]) -> tuple[float, float]:
    return (sum(r for r, _ in cells) / len(cells), sum(c for _, c in cells) / len(cells))


def describe(things: list[Thing]) -> list[str]:
    """Every caption of a layout, the canonical one first, no repeats (at least :data:`MAX_REFERENCES`)."""
    check_layout(things)
    groups = _groups(things)
    if len(groups) == 1:
        kind, cells = groups[0]
        captions = _one_thing(kind, cells[0]) if len(cells) == 1 else _one_group(kind, cells)
    elif len(groups) == 2:
        captions = _two_groups(*groups)
    else:
        captions = _three_things([(kind, cells[0]) for kind, cells in groups])
    return list(dict.fromkeys(captions))


def _one_thing(kind: tuple[str, str, str], cell: tuple[int, int]) -> list[str]:
    thing = noun_phrase(kind, 1)
    places = [PLACES[cell]] + ([PLACES[cell] + " corner"] if cell in CORNERS else [])
    return [
        caption
        for place in places
        for caption in (
            f"{thing} {place}",
            f"there is {thing} {place}",
            f"{place} there is {thing}",
            f"{thing} is {place}",
            f"{place} is {thing}",
        )
    ]


def _one_group(kind: tuple[str, str, str], cells: list[tuple[int, int]]) -> list[str]:
    things = noun_phrase(kind, len(cells))
    captions = []
    for order in itertools.permutations(cells):
        places = _listing([PLACES[cell] for cell in order])
        ones = _listing([f"one {PLACES[cell]}" for cell in order])
        captions += [
            f"{things} {places}",
            f"there are {things} {places}",
            f"{things} {ones}",
            f"there are {things} {ones}",
        ]
    return captions


def _two_groups(first: tuple, second: tuple) -> list[str]:
    (kind_a, cells_a), (kind_b, cells_b) = first, second
    rel = relation(_centre(cells_a), _centre(cells_b))
    if rel == "between":
        single, pair = (first, second) if len(cells_a) == 1 else (second, first)
        one, two = noun_phrase(single[0], 1), noun_phrase(pair[0], len(pair[1]))
        return [
            f"{one} between {two}",
            f"there is {one} between {two}",
            f"{one} is between {two}",
            f"{two} with {one} between them",
            f"there are {two} with {one} between them",
        ]
    a, b = noun_phrase(kind_a, len(cells_a)), noun_phrase(kind_b, len(cells_b))
    if not rel.startswith(("left", "above")):  # canonical: the left (or upper) group first
        a, b, cells_a, cells_b, rel = b, a, cells_b, cells_a, _reverse(rel)
    captions = []
    for x, y, count, r in ((a, b, len(cells_a), rel), (b, a, len(cells_b), _reverse(rel))):
        for phrase in dict.fromkeys((r, _to_the(r))):
            captions += [f"{x} {phrase} {y}", f"there {_be(count)} {x} {phrase} {y}", f"{x} {_be(count)} {phrase} {y}"]
    return captions


def _three_things(things: list[tuple[tuple[str, str, str], tuple[int, int]]]) -> list[str]:
    columns = {cell[1] for _, cell in things}
    rows = {cell[0] for _, cell in things}
    captions = []
    for axis, distinct, forward, backward in (
        (1, columns, "from left to right", "from right to left"),
        (0, rows, "from top to bottom", "from bottom to top"),
    ):
        if len(distinct) == 3:
            ordered = [noun_phrase(kind, 1) for kind, cell in sorted(things, key=lambda t: t[1][axis])]
            there, back = _listing(ordered), _listing(ordered[::-1])
            captions += [
                f"{forward} {there}",
                f"{there} {forward}",
                f"{backward} {back}",
                f"{back} {backward}",
                f"there is {there} {forward}",
                f"there is {back} {backward}",
            ]
    if captions:
        return captions
    # An L shape: the corner object shares its row with one object and its column with the other.
    for kind, cell in things:  # noqa: B007 (the corner's kind is read after the loop)
        same_row = [t for t in things if t[1] != cell and t[1][0] == cell[0]]
        same_column = [t for t in things if t[1] != cell and t[1][1] == cell[1]]
        if same_row and same_column:
            break
    (row_kind, row_cell), (column_kind, column_cell) = same_row[0], same_column[0]
    p, q, r = noun_phrase(kind, 1), noun_phrase(row_kind, 1), noun_phrase(column_kind, 1)
    horizontal, vertical = relation(cell, row_cell), relation(cell, column_cell)
    for h in (horizontal, _to_the(horizontal)):
        captions += [
            f"{p} {h} {q} and {vertical} {r}",
            f"{p} {vertical} {r} and {h} {q}",
            f"there is {p} {h} {q} and {vertical} {r}",
            f"there is {p} {vertical} {r} and {h} {q}",
        ]
    return captions


def check_layout(things: list[Thing]) -> None:
    if not 1 <= len(things) <= MAX_OBJECTS:
        raise SceneError(f"a scene has 1 to {MAX_OBJECTS} objects, not {len(things)}")
    cells = [t.cell for t in things]
    if len(set(cells)) != len(cells):
        raise SceneError(f"two objects share a cell: {sorted(cells)}; every object needs a cell of its own")


# --------------------------------------------------------------------------- drawing
@dataclass(frozen=True)
class Placement:
    """Where an object is drawn: its centre's offset from its cell's centre and its brightness, in [0.85, 1]."""

    dx: float = 0.0
    dy: float = 0.0
    brightness: float = 1.0


def max_jitter(size: str, image_size: int) -> float:
    """How far (pixels) an object's centre may move from its cell's centre and stay 1 pixel inside the cell."""
    cell = image_size / GRID
    return max(0.0, cell / 2 - RADIUS[size] * cell - 1)


def _mask(shape: str, dx: np.ndarray, dy: np.ndarray, r: float) -> np.ndarray:
    """Pixels (offsets ``dx``, ``dy`` from the centre) inside a shape of radius ``r``."""
    if shape == "circle":
        return dx * dx + dy * dy <= r * r
    if shape == "square":
        return np.maximum(np.abs(dx), np.abs(dy)) <= 0.82 * r
    if shape == "triangle":  # apex up, base 0.8 r below the centre
        return (dy >= -r) & (dy <= 0.8 * r) & (np.abs(dx) <= 0.95 * r * (dy + r) / (1.8 * r))
    arm = 0.3 * r  # cross
    return ((np.abs(dx) <= arm) & (np.abs(dy) <= r)) | ((np.abs(dy) <= arm) & (np.abs(dx) <= r))


def render(
    things: list[Thing],
    image_size: int = 64,
    placements: list[Placement] | None = None,
    noise: int = 0,
    noise_seed: int = 0,
) -> np.ndarray:
    """The (image_size, image_size, 3) uint8 image of a layout.

    ``placements`` (one per thing; default: centred, full brightness) move each
    object within its cell (offsets are clipped to :func:`max_jitter`). Every
    pixel gets uniform noise in ``[-noise, noise]`` per channel, drawn from
    PCG64 seeded with ``noise_seed``.
    """
    check_layout(things)
    placements = placements or [Placement()] * len(things)
    cell = image_size / GRID
    canvas = np.full((image_size, image_size, 3), BACKGROUND, dtype=np.int16)
    for thing, place in zip(things, placements):
        r, jitter = RADIUS[thing.size] * cell, max_jitter(thing.size, image_size)
        cx = (thing.column + 0.5) * cell + float(np.clip(place.dx, -jitter, jitter))
        cy = (thing.row + 0.5) * cell + float(np.clip(place.dy, -jitter, jitter))
        x0, x1 = max(0, int(cx - r) - 1), min(image_size, int(cx + r) + 2)
        y0, y1 = max(0, int(cy - r) - 1), min(image_size, int(cy + r) + 2)
        dx = np.arange(x0, x1, dtype=np.float32)[None, :] + 0.5 - cx  # pixel centres
        dy = np.arange(y0, y1, dtype=np.float32)[:, None] + 0.5 - cy
        colour = np.round(np.array(COLOURS[thing.colour]) * place.brightness).astype(np.int16)
        canvas[y0:y1, x0:x1][_mask(thing.shape, dx, dy, r)] = colour
    if noise:
        raw = np.random.PCG64(noise_seed).random_raw(canvas.size).reshape(canvas.shape)
        canvas += (raw % np.uint64(2 * noise + 1)).astype(np.int16) - noise
    return np.clip(canvas, 0, 255).astype(np.uint8)


# --------------------------------------------------------------------------- drawing scenes at random
# How n objects split into kinds: (group sizes, weight). Repeated kinds are common so counting matters.
PARTITIONS = {1: [((1,), 1.0)], 2: [((2,), 0.35), ((1, 1), 0.65)], 3: [((3,), 0.2), ((2, 1), 0.4), ((1, 1, 1), 0.4)]}


def _random_kind(rng: random.Random) -> tuple[str, str, str]:
    return (rng.choice(SHAPES), rng.choice(tuple(COLOURS)), rng.choice(SIZES))


def _near_kind(kind: tuple[str, str, str], rng: random.Random) -> tuple[str, str, str]:
    """``kind`` with one attribute changed."""
    which = rng.randrange(3)
    options = (SHAPES, tuple(COLOURS), SIZES)[which]
    changed = list(kind)
    changed[which] = rng.choice([o for o in options if o != kind[which]])
    return tuple(changed)  # type: ignore[return-value]


def random_layout(rng: random.Random, min_objects: int = 1, max_objects: int = MAX_OBJECTS) -> list[Thing]:
    """A scene's objects: 1-3 objects in distinct cells, often with repeated kinds or kinds one attribute apart."""
    count = rng.randint(min_objects, max_objects)
    options, weights = zip(*PARTITIONS[count])
    sizes = rng.choices(options, weights)[0]
    kinds: list[tuple[str, str, str]] = []
    while len(kinds) < len(sizes):
        kind = _near_kind(rng.choice(kinds), rng) if kinds and rng.random() < 0.5 else _random_kind(rng)
        if kind not in kinds:
            kinds.append(kind)
    cells = rng.sample(range(GRID * GRID), count)
    objects = [kind for kind, n in zip(kinds, sizes) for _ in range(n)]
    return [Thing(*kind, row=c // GRID, column=c % GRID) for kind, c in zip(objects, cells)]


def random_placements(things: list[Thing], image_size: int, rng: random.Random) -> list[Placement]:
    placements = []
    for thing in things:
        jitter = max_jitter(thing.size, image_size)
        placements.append(Placement(rng.uniform(-jitter, jitter), rng.uniform(-jitter, jitter), rng.uniform(0.85, 1.0)))
    return placements


# --------------------------------------------------------------------------- the dataset
@register("dataset", "scenes")
class ScenesDataset(Dataset):
    """Synthetic captioning: 1-3 coloured shapes on a 3 x 3 grid, captions about count, kind and place; no files.

    Items are ``Item(id="train-00042", ImageSource(key="scenes-<settings>/train-00042",
    pixels=(H, W, 3) uint8), references)``, the canonical caption first. The
    image key names the settings that shape the pixels (seed, size, noise,
    object counts), so features precomputed for one setting never pass for another.
    """

    source_kind = "image"

    @dataclass
    class Config:
        seed: int = 0  # chooses the scenes (the shapes, colours and grammar are fixed)
        train_size: int = 2000  # images in the training split
        val_size: int = 200  # images in the validation split
        test_size: int = 200  # images in the test split
        image_size: int = 64  # side of the square images in pixels (at least 32, so small shapes stay legible)
        min_objects: int = 1  # fewest objects in a scene
        max_objects: int = 3  # most objects in a scene (at most 3)
        references: int = 4  # captions per image: the canonical one and references - 1 paraphrases (at most 5)
        noise: int = 6  # per-pixel noise: each channel moves by up to this many grey levels (0: flat colours)

        def __post_init__(self) -> None:
            for size in ("train_size", "val_size", "test_size"):
                at_least(self, size, 1)
            at_least(self, "image_size", 32, "smaller images blur the small shapes into dots")
            between(self, "min_objects", 1, MAX_OBJECTS)
            between(self, "max_objects", 1, MAX_OBJECTS, "the captions describe at most 3 objects")
            must_be(self, "max_objects", lambda n: n >= self.min_objects, f">= min_objects={self.min_objects}")
            between(self, "references", 1, MAX_REFERENCES, f"every scene has {MAX_REFERENCES} distinct captions")
            between(self, "noise", 0, 64)

    @property
    def key_prefix(self) -> str:
        cfg = self.cfg
        return f"scenes-seed{cfg.seed}-{cfg.image_size}px-noise{cfg.noise}-objects{cfg.min_objects}to{cfg.max_objects}"

    def item(self, split: str, index: int, attempt: int = 0) -> Item:
        """Item ``index`` of ``split``: a function of the config, ``split`` and ``index`` only."""
        cfg = self.cfg
        rng = random.Random(f"{cfg.seed}:{split}:{index}" + (f":{attempt}" if attempt else ""))
        things = random_layout(rng, cfg.min_objects, cfg.max_objects)
        pixels = render(
            things, cfg.image_size, random_placements(things, cfg.image_size, rng), cfg.noise, rng.getrandbits(64)
        )
        captions = describe(things)
        references = (captions[0], *rng.sample(captions[1:], cfg.references - 1))
        item_id = f"{split}-{index:05d}"
        return Item(item_id, ImageSource(key=f"{self.key_prefix}/{item_id}", pixels=pixels), references)

    def splits(self) -> dict[str, list[Item]]:
        cfg = self.cfg
        sizes = {"train": cfg.train_size, "val": cfg.val_size, "test": cfg.test_size}
        seen: set[bytes] = set()
        data: dict[str, list[Item]] = {}
        for split in SPLITS:
            data[split] = []
            for index in range(sizes[split]):
                for attempt in range(100):  # a repeated image (never seen in practice) is drawn again
                    item = self.item(split, index, attempt)
                    digest = hashlib.blake2b(item.source.pixels.tobytes(), digest_size=16).digest()
                    if digest not in seen:
                        break
                else:
                    raise SceneError(f"could not draw a new image for {split}-{index}; raise noise or image_size")
                seen.add(digest)
                data[split].append(item)
        return data
