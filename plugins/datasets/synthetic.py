"""The ``synthetic`` dataset: a toy language pair generated from a seed, no files needed.

The source is a small English (subject-verb-object word order); the target is
an invented language with the properties that make real translation hard:

* **Reordering.** The target is verb-final (SOV, like Turkish or Japanese):
  ``subject  place-phrases  object  verb``. Prepositions become postpositions,
  adjectives follow their noun in mirror order, and noun modifiers
  ("of the king", "with the hat", "that sees the cat") move *before* their noun.
* **Morphology.** Target words are stem + suffixes, so a subword tokenizer can
  share statistics across forms: nouns and adjectives take number and case
  suffixes (adjectives agree with their noun), verbs take tense and agree with
  their subject in person and number, relative-clause verbs become participles
  that agree with the noun they describe. Each suffix has two shapes, ``x|y``:
  ``x`` after a vowel, ``y`` after a consonant (like vowel-conditioned allomorphs)::

      number      sg -      pl ri|eri
      case        nom -     acc t|et    obl n|en    gen s|is    com la|ala
      tense       present - past vi|evi
      agreement   1sg m|um  2sg s|us    3sg t|et    1pl mo|umo  3pl n|en
      participle  sg head nu|unu        pl head nur|unur

  "the" has no target word, "a"/"some" become a word after the noun phrase,
  "this"/"these" a word before it.
* **Long sentences.** Clauses are joined by conjunctions and grow by
  adjectives, place phrases, possessors, companions and relative clauses, so a
  sentence of any requested length (2 to 100+ words) reads naturally.

Example (glosses: PL plural, ACC accusative, OBL oblique, GEN genitive,
PTCP participle, 3SG third person singular)::

    a king that chases the dogs took this old hat of the girls near the river
    belukerit  gotanu     zato mul sogilen   tul  zil  mafiris     miriset nuvelet sufanevit
    dog-PL-ACC chase-PTCP king a   river-OBL near this girl-PL-GEN hat-ACC old-ACC take-PAST-3SG

The translation is a deterministic function of the source sentence (each
preposition attaches in one way only, every noun takes at most one modifier),
so a perfect model could reach BLEU 100. The lexicon (about 170 source lemmas,
300 source word forms) is fixed; ``seed`` only chooses the sentences.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from zoo.api import SPLITS, Dataset, Item, ZooError, register

from .synthetic_config import SyntheticConfig

# --------------------------------------------------------------------------- source lexicon
NOUNS = (
    "man woman child boy girl teacher doctor farmer king queen soldier student baker sailor dog cat horse bird "
    "mouse fox cow rabbit snake house tree river garden table chair box book letter key car boat bridge road "
    "window door hat ball cup bottle apple flower stone city village forest hill lake park school church "
    "kitchen field market tower shop island"
).split()
IRREGULAR_PLURALS = {"man": "men", "woman": "women", "child": "children", "mouse": "mice"}
ADJECTIVES = (
    "big small old young red blue green black white happy sad tall short quiet loud clever lazy brave angry "
    "strange beautiful dark bright heavy warm cold rich poor busy tired"
).split()
TRANSITIVE_VERBS = (
    "see find take hold build bring catch meet follow watch help paint clean push pull call visit carry "
    "chase like love need want greet guard hunt lift touch wash open"
).split()
INTRANSITIVE_VERBS = "sleep laugh smile dance jump wait work rest cry shout walk play listen arrive run".split()
IRREGULAR_PAST = {
    "see": "saw",
    "find": "found",
    "take": "took",
    "hold": "held",
    "build": "built",
    "bring": "brought",
    "catch": "caught",
    "meet": "met",
    "sleep": "slept",
    "run": "ran",
}
# Place and time phrases attach to the clause; "of" and "with" attach to the noun before them.
PREPOSITIONS = "in on under near behind beside after before across from".split()
CONJUNCTIONS = "and but because while so".split()
# (nominative, accusative, agreement) for each pronoun.
PRONOUNS = (
    ("i", "me", "1sg"),
    ("you", "you", "2sg"),
    ("he", "him", "3sg"),
    ("she", "her", "3sg"),
    ("it", "it", "3sg"),
    ("we", "us", "1pl"),
    ("they", "them", "3pl"),
)
# Determiner kinds: "the" (no target word), "a" (indefinite: a target word after the noun phrase),
# "this" (demonstrative: a target word before it). Source spelling, singular and plural:
DETERMINERS = {"the": ("the", "the"), "a": ("a", "some"), "this": ("this", "these")}

# --------------------------------------------------------------------------- target morphology
Suffix = tuple[str, str]  # (after a vowel, after a consonant)
PLURAL: Suffix = ("ri", "eri")
CASES: dict[str, Suffix] = {
    "nom": ("", ""),
    "acc": ("t", "et"),
    "obl": ("n", "en"),
    "gen": ("s", "is"),
    "com": ("la", "ala"),
}
PAST: Suffix = ("vi", "evi")
AGREEMENT: dict[str, Suffix] = {
    "1sg": ("m", "um"),
    "2sg": ("s", "us"),
    "3sg": ("t", "et"),
    "1pl": ("mo", "umo"),
    "3pl": ("n", "en"),
}
PARTICIPLE: dict[bool, Suffix] = {False: ("nu", "unu"), True: ("nur", "unur")}  # keyed by: head noun is plural
VOWELS = "aeiou"


def inflect(stem: str, *suffixes: Suffix) -> str:
    """Attach suffixes left to right, each in its after-vowel or after-consonant shape."""
    word = stem
    for after_vowel, after_consonant in suffixes:
        word += after_vowel if word[-1] in VOWELS else after_consonant
    return word


def _plural(noun: str) -> str:
    if noun in IRREGULAR_PLURALS:
        return IRREGULAR_PLURALS[noun]
    if noun.endswith(("s", "sh", "ch", "x")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in VOWELS:
        return noun[:-1] + "ies"
    return noun + "s"


def _third_singular(verb: str) -> str:
    if verb.endswith(("s", "sh", "ch", "x", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2] not in VOWELS:
        return verb[:-1] + "ies"
    return verb + "s"


def _past(verb: str) -> str:
    if verb in IRREGULAR_PAST:
        return IRREGULAR_PAST[verb]
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and verb[-2] not in VOWELS:
        return verb[:-1] + "ied"
    return verb + "ed"


class ToyLanguage:
    """The fixed lexicon: every source lemma -> an invented target stem.

    Stems are drawn from a fixed seed (the language never changes with the
    dataset seed) and re-drawn until no inflected form of one stem equals a
    form of another, so every target word has exactly one reading.
    """

    SEED = 2016
    ONSETS = "b d f g k l m n p r s t v z".split()
    CODAS = ["", "", "", "l", "m", "n", "r", "k", "s"]

    def __init__(self) -> None:
        self.rng = random.Random(self.SEED)
        self.forms: set[str] = set()
        self.stem: dict[str, str] = {}
        for word in CONJUNCTIONS + PREPOSITIONS + ["a", "this"]:
            self._add(word, syllables=1, forms=lambda stem: [stem])
        for nominative, _, _ in PRONOUNS:
            self._add(nominative, syllables=1, forms=self._pronoun_forms)
        for word in NOUNS + ADJECTIVES:
            self._add(word, syllables=2, forms=self._nominal_forms)
        for word in TRANSITIVE_VERBS + INTRANSITIVE_VERBS:
            self._add(word, syllables=2, forms=self._verb_forms)
        self.finite_verb_forms = {
            inflect(self.stem[v], *tense, agr)
            for v in TRANSITIVE_VERBS + INTRANSITIVE_VERBS
            for tense in ((), (PAST,))
            for agr in AGREEMENT.values()
        }

    def _syllables(self, count: int) -> str:
        text = "".join(self.rng.choice(self.ONSETS) + self.rng.choice(VOWELS) for _ in range(count))
        return text + self.rng.choice(self.CODAS)

    def _add(self, word: str, syllables: int, forms: Callable[[str], list[str]]) -> None:
        """Draw a stem for ``word`` whose forms are distinct from each other and from every form so far."""
        while True:
            stem = self._syllables(syllables)
            new = forms(stem)
            if len(set(new)) == len(new) and not self.forms.intersection(new):
                self.stem[word] = stem
                self.forms.update(new)
                return

    @staticmethod
    def _pronoun_forms(stem: str) -> list[str]:
        return [inflect(stem, CASES["nom"]), inflect(stem, CASES["acc"])]

    @staticmethod
    def _nominal_forms(stem: str) -> list[str]:
        return [inflect(stem, *number, case) for number in ((), (PLURAL,)) for case in CASES.values()]

    @staticmethod
    def _verb_forms(stem: str) -> list[str]:
        endings = list(AGREEMENT.values()) + list(PARTICIPLE.values())
        return [inflect(stem, *tense, end) for tense in ((), (PAST,)) for end in endings]


@functools.lru_cache(maxsize=1)
def toy_language() -> ToyLanguage:
    return ToyLanguage()


# --------------------------------------------------------------------------- syntax trees
@dataclass
class Pronoun:
    """A personal pronoun: ``PRONOUNS[index]``."""

    index: int

    @property
    def agreement(self) -> str:
        return PRONOUNS[self.index][2]


@dataclass
class NounPhrase:
    """det adjectives noun [modifier]; ``depth`` counts how deeply it is nested in modifiers."""

    noun: str
    plural: bool
    det: str  # a key of DETERMINERS
    depth: int = 0
    adjectives: list[str] = field(default_factory=list)
    modifier: Attribute | Relative | None = None

    @property
    def agreement(self) -> str:
        return "3pl" if self.plural else "3sg"


@dataclass
class Attribute:
    """ "of NP" (target: possessor in the genitive) or "with NP" (comitative), before the head noun."""

    kind: str  # "of" | "with"
    phrase: NounPhrase


@dataclass
class Relative:
    """ "that VERB [OBJECT]" describing the noun before it; target: [object] participle, before the noun."""

    verb: str
    past: bool
    obj: NounPhrase | Pronoun | None


Argument = NounPhrase | Pronoun


@dataclass
class Clause:
    """subject verb [object] (preposition noun-phrase)*."""

    subject: Argument
    verb: str
    past: bool
    obj: Argument | None = None
    places: list[tuple[str, NounPhrase]] = field(default_factory=list)


# --------------------------------------------------------------------------- rendering
def source_words(clauses: list[Clause], conjunctions: list[str]) -> list[str]:
    """The English sentence: clauses joined by ``conjunctions`` (one fewer than clauses)."""
    words = _source_clause(clauses[0])
    for conjunction, clause in zip(conjunctions, clauses[1:]):
        words += [conjunction, *_source_clause(clause)]
    return words


def _source_verb(verb: str, past: bool, agreement: str) -> str:
    if past:
        return _past(verb)
    return _third_singular(verb) if agreement == "3sg" else verb


def _source_argument(arg: Argument, accusative: bool) -> list[str]:
    if isinstance(arg, Pronoun):
        return [PRONOUNS[arg.index][1 if accusative else 0]]
    words = [DETERMINERS[arg.det][arg.plural], *arg.adjectives, _plural(arg.noun) if arg.plural else arg.noun]
    if isinstance(arg.modifier, Attribute):
        words += [arg.modifier.kind, *_source_argument(arg.modifier.phrase, accusative=True)]
    elif isinstance(arg.modifier, Relative):
        rel = arg.modifier
        words += ["that", _source_verb(rel.verb, rel.past, arg.agreement)]
        if rel.obj is not None:
            words += _source_argument(rel.obj, accusative=True)
    return words


def _source_clause(clause: Clause) -> list[str]:
    words = [
        *_source_argument(clause.subject, accusative=False),
        _source_verb(clause.verb, clause.past, clause.subject.agreement),
    ]
    if clause.obj is not None:
        words += _source_argument(clause.obj, accusative=True)
    for preposition, phrase in clause.places:
        words += [preposition, *_source_argument(phrase, accusative=True)]
    return words


def target_words(clauses: list[Clause], conjunctions: list[str], language: ToyLanguage) -> list[str]:
    """The translation: the same clauses and conjunctions, each clause verb-final."""
    words = _target_clause(clauses[0], language)
    for conjunction, clause in zip(conjunctions, clauses[1:]):
        words += [language.stem[conjunction], *_target_clause(clause, language)]
    return words


def _target_argument(arg: Argument, case: str, language: ToyLanguage) -> list[str]:
    stem = language.stem
    if isinstance(arg, Pronoun):
        return [inflect(stem[PRONOUNS[arg.index][0]], CASES[case])]
    number = (PLURAL,) if arg.plural else ()
    words = [stem["this"]] if arg.det == "this" else []
    if isinstance(arg.modifier, Attribute):
        words += _target_argument(arg.modifier.phrase, "gen" if arg.modifier.kind == "of" else "com", language)
    elif isinstance(arg.modifier, Relative):
        rel = arg.modifier
        if rel.obj is not None:
            words += _target_argument(rel.obj, "acc", language)
        tense = (PAST,) if rel.past else ()
        words.append(inflect(stem[rel.verb], *tense, PARTICIPLE[arg.plural]))
    words.append(inflect(stem[arg.noun], *number, CASES[case]))
    words += [inflect(stem[adj], *number, CASES[case]) for adj in reversed(arg.adjectives)]
    if arg.det == "a":
        words.append(stem["a"])
    return words


def _target_clause(clause: Clause, language: ToyLanguage) -> list[str]:
    words = _target_argument(clause.subject, "nom", language)
    for preposition, phrase in clause.places:
        words += [*_target_argument(phrase, "obl", language), language.stem[preposition]]
    if clause.obj is not None:
        words += _target_argument(clause.obj, "acc", language)
    tense = (PAST,) if clause.past else ()
    words.append(inflect(language.stem[clause.verb], *tense, AGREEMENT[clause.subject.agreement]))
    return words


# --------------------------------------------------------------------------- generation
class SentenceGenerator:
    """Random sentences of a requested length in source words.

    A sentence of ``n`` words is planned as a few clauses (about one per 7-12
    words), each given a word budget; a clause starts minimal ("the dog sleeps")
    and grows by random expansions that fit the budget left: an adjective
    (1 word), a place phrase (3), "of/with" + noun phrase (3), a relative clause
    (2-4). Nouns nest at most ``MAX_DEPTH`` modifiers deep.
    """

    MAX_DEPTH = 2

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def sentence(self, length: int) -> tuple[list[Clause], list[str]]:
        rng = self.rng
        count = max(1, min(round(length / rng.uniform(7, 12)), (length + 1) // 4))
        budgets = self._split(length - (count - 1), count)
        return [self.clause(b) for b in budgets], [rng.choice(CONJUNCTIONS) for _ in range(count - 1)]

    def _split(self, total: int, parts: int) -> list[int]:
        """``parts`` budgets of at least 3 words (2 if the total is tiny) summing to ``total``."""
        floor = min(3, total // parts)
        cuts = sorted(self.rng.randint(0, total - floor * parts) for _ in range(parts - 1))
        edges = [0, *cuts, total - floor * parts]
        return [floor + edges[i + 1] - edges[i] for i in range(parts)]

    def _noun_phrase(self, depth: int) -> NounPhrase:
        rng = self.rng
        return NounPhrase(rng.choice(NOUNS), rng.random() < 0.4, rng.choice(("the", "the", "a", "this")), depth)

    def _argument(self, pronoun: bool, depth: int = 0) -> Argument:
        return Pronoun(self.rng.randrange(len(PRONOUNS))) if pronoun else self._noun_phrase(depth)

    def clause(self, budget: int) -> Clause:
        rng = self.rng
        # (subject is a pronoun, object: None | "pronoun" | "phrase") -> weight; cost = words used.
        shapes = {
            (True, None): 1,
            (False, None): 3,
            (True, "pronoun"): 0.5,
            (False, "pronoun"): 1.5,
            (True, "phrase"): 2,
            (False, "phrase"): 6,
        }
        cost = {None: 0, "pronoun": 1, "phrase": 2}
        feasible = {s: w for s, w in shapes.items() if (1 if s[0] else 2) + 1 + cost[s[1]] <= budget}
        if not feasible:  # a budget below 3 words: "he sleeps"
            feasible = {(True, None): 1}
        subject_pronoun, object_kind = rng.choices(list(feasible), weights=list(feasible.values()))[0]
        clause = Clause(
            subject=self._argument(subject_pronoun),
            verb=rng.choice(TRANSITIVE_VERBS if object_kind else INTRANSITIVE_VERBS),
            past=rng.random() < 0.4,
            obj=self._argument(object_kind == "pronoun") if object_kind else None,
        )
        phrases = [a for a in (clause.subject, clause.obj) if isinstance(a, NounPhrase)]
        left = budget - (1 if subject_pronoun else 2) - 1 - cost[object_kind]
        while left > 0:
            spent = self._expand(clause, phrases, left)
            if spent == 0:
                break
            left -= spent
        return clause

    def _expand(self, clause: Clause, phrases: list[NounPhrase], left: int) -> int:
        """Apply one random expansion that costs at most ``left`` words; returns its cost (0: none fits)."""
        rng = self.rng
        options = []  # (weight, action)
        bare = [p for p in phrases if len(p.adjectives) < 2]
        if bare:
            options.append((3, "adjective"))
        if left >= 3 and len(clause.places) < 3:
            options.append((2, "place"))
        open_phrases = [p for p in phrases if p.modifier is None and p.depth < self.MAX_DEPTH]
        if open_phrases and left >= 2:
            options.append((3, "modifier"))
        if not options:
            return 0
        action = rng.choices([a for _, a in options], weights=[w for w, _ in options])[0]
        if action == "adjective":
            phrase = rng.choice(bare)
            phrase.adjectives.append(rng.choice([a for a in ADJECTIVES if a not in phrase.adjectives]))
            return 1
        if action == "place":
            phrase = self._noun_phrase(depth=0)
            clause.places.append((rng.choice(PREPOSITIONS), phrase))
            phrases.append(phrase)
            return 3
        head = rng.choice(open_phrases)
        kinds = (
            ["intransitive"]
            + (["of", "with", "transitive-pronoun"] if left >= 3 else [])
            + (["transitive"] if left >= 4 else [])
        )
        kind = rng.choice(kinds)
        past = rng.random() < 0.4
        if kind in ("of", "with"):
            inner = self._noun_phrase(head.depth + 1)
            head.modifier = Attribute(kind, inner)
            phrases.append(inner)
            return 3
        if kind == "intransitive":
            head.modifier = Relative(rng.choice(INTRANSITIVE_VERBS), past, None)
            return 2
        obj = self._argument(kind == "transitive-pronoun", head.depth + 1)
        head.modifier = Relative(rng.choice(TRANSITIVE_VERBS), past, obj)
        if isinstance(obj, NounPhrase):
            phrases.append(obj)
            return 4
        return 3


class SyntheticDataError(ZooError, ValueError):
    """The synthetic language cannot give the sentences asked for."""


@register("dataset", "synthetic")
class SyntheticDataset(Dataset):
    """Toy English -> invented SOV language with suffix morphology; generated from a seed, no files.

    Sentence lengths (in source words) are drawn uniformly from
    ``[min_words, max_words]``; with ``length_split`` train/val use
    ``[min_words, train_max_words]`` and test ``[test_min_words, max_words]``
    (to measure length generalisation). No source sentence occurs twice in
    the whole dataset, so val and test never overlap train.
    """

    Config = SyntheticConfig

    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg)
        self.language = toy_language()

    def files(self) -> list:
        return []  # generated from the config alone

    def splits(self) -> dict[str, list[Item]]:
        cfg = self.cfg
        generator = SentenceGenerator(random.Random(cfg.seed))
        seen: set[str] = set()
        if cfg.length_split:
            ranges = {
                "train": (cfg.min_words, cfg.train_max_words),
                "val": (cfg.min_words, cfg.train_max_words),
                "test": (cfg.test_min_words, cfg.max_words),
            }
        else:
            ranges = dict.fromkeys(("train", "val", "test"), (cfg.min_words, cfg.max_words))
        sizes = {"train": cfg.train_size, "val": cfg.val_size, "test": cfg.test_size}
        return {split: self._generate(split, generator, sizes[split], *ranges[split], seen) for split in SPLITS}

    def _generate(
        self, split: str, generator: SentenceGenerator, size: int, low: int, high: int, seen: set[str]
    ) -> list[Item]:
        examples: list[Item] = []
        attempts = 0
        while len(examples) < size:
            attempts += 1
            if attempts > 50 * size + 1000:
                raise SyntheticDataError(
                    f"could not draw {size} new distinct sentences of {low}-{high} words; "
                    "lower the split sizes or widen the length range"
                )
            clauses, conjunctions = generator.sentence(generator.rng.randint(low, high))
            words = source_words(clauses, conjunctions)
            source = " ".join(words)
            if not low <= len(words) <= high or source in seen:
                continue
            seen.add(source)
            target = " ".join(target_words(clauses, conjunctions, self.language))
            examples.append(Item(f"{split}-{len(examples)}", source, (target,)))
        return examples
