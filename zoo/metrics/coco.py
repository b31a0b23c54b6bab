"""What the coco-caption metrics share: their tokenisation, without Java, and n-gram counting.

Captioning papers score with the MS COCO caption evaluation code (Chen et al., 2015,
"Microsoft COCO Captions: Data Collection and Evaluation Server", arXiv:1504.00325;
the ``pycocoevalcap`` package). Before any metric it runs every hypothesis and
reference through Stanford CoreNLP's PTBTokenizer 3.4.1 (Java) with
``-preserveLines -lowerCase`` and then removes the punctuation tokens in its list.
:func:`caption_tokens` follows that convention in plain Python, so the BLEU, CIDEr-D
and ROUGE-L plugins need no Java; their signatures say ``tok:ptb-nojava``.

What the tokenisation does (learnt by running the Java tokeniser on example lines):

- lower-cases, and splits punctuation from words the Penn Treebank way: ``surfboard.``
  -> ``surfboard .``; clitics become tokens (``it's`` -> ``it 's``, ``don't`` ->
  ``do n't``, ``can't`` -> ``ca n't``, ``cannot`` -> ``can not``, ``gonna`` -> ``gon na``);
- keeps together hyphenated words (``black-and-white``, ``t-shirt``), numbers
  (``3.5``, ``1,000``, ``10:30``), acronyms and known abbreviations with their period
  (``u.s.``, ``p.m.``, ``mr.``, ``st.``, ``etc.``; ``no.`` only before a number), and a
  run of ``!``/``?`` (``!?`` is one token);
- rewrites some characters as the Java tokeniser does: curly quotes, ``…`` -> ``...``,
  dashes -> ``--``, ``£`` -> ``#``, ``€`` -> ``$``, ``¢`` -> ``cents``, ``½`` -> ``1/2``;
- then drops the tokens ``. , : ; ! ? - -- ...`` and every quote token.

Two of coco-caption's quirks are kept on purpose, because published scores contain
them: brackets survive as the tokens ``-lrb- -rrb- -lsb- -rsb- -lcb- -rcb-`` (its drop
list spells them in upper case, but the tokeniser has already lower-cased them), and
runs such as ``!?`` or ``!!!`` are not dropped.

Known differences from the Java tokeniser (text unusual in captions): SGML/HTML tags
and entities, e-mail addresses and URLs followed by punctuation, upper-case
abbreviations at the very end of a caption (Java adds a second period), and rare
apostrophe words beyond ``o'clock``, ``ma'am``, ``'em``, ``'cause``, ``'til``,
``'90s``, ``'n'``, ``y'``, ``'tis``/``'twas``.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zoo.contracts import Metric
from zoo.errors import ZooError

TOKENIZER_NAME = "ptb-nojava"  # in every signature; rename when the tokenisation changes

# The tokens coco-caption's PTBTokenizer wrapper removes after tokenising, as they reach it: lower-cased.
# (Its list also names -LRB- -RRB- -LCB- -RCB- in upper case; lower-cased tokens never match them.)
DROPPED = frozenset({"''", "'", "``", "`", ".", "?", "!", ",", ":", "-", "--", "...", ";"})

# Abbreviations the Java tokeniser keeps with their period (checked one by one against it).
ABBREVIATIONS = frozenset(
    "mr mrs ms messrs mme mlle dr prof gen sen rep col lt sgt capt cmdr adm maj gov pres rev hon cpl pvt "
    "st ave rd blvd ste bldg ct dept univ assn bros corp ltd inc co plc jr sr mt ft vs etc est esq cf sq al ph "
    "jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thurs fri "
    "ariz calif colo conn fla ind kan ky md mich minn mo neb nev okla penn tenn va vt wis wyo ph.d".split()
)
# Whole words the Java tokeniser splits in two.
SPLIT_WORDS = {
    "cannot": ("can", "not"),
    "gonna": ("gon", "na"),
    "gotta": ("got", "ta"),
    "wanna": ("wan", "na"),
    "gimme": ("gim", "me"),
    "lemme": ("lem", "me"),
}
BRACKETS = {"(": "-lrb-", ")": "-rrb-", "[": "-lsb-", "]": "-rsb-", "{": "-lcb-", "}": "-rcb-"}
QUOTE = "''"  # every quote character becomes a quote token, and every quote token is dropped
# Characters rewritten before tokenising (the Java tokeniser's normalisations that matter for captions).
REWRITES = str.maketrans(
    {
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2019": "'",
        "\u0092": "'",  # apostrophes; other single quotes never join a word:
        "\u2018": "`",
        "\u201a": "`",
        "\u201b": "`",
        "\u2039": "`",
        "\u203a": "`",
        "\u2026": "...",
        "\u2014": " -- ",
        "\u2013": " -- ",
        "\u2015": " -- ",
        "\u2012": " -- ",
        "\u00a3": " # ",
        "\u20ac": " $ ",
        "\u00a2": " cents ",
        "\u00bd": " 1/2 ",
        "\u00bc": " 1/4 ",
        "\u00be": " 3/4 ",
        "\u00a0": " ",
    }
)

_L = r"[^\W\d_]"  # a letter
_A = r"[^\W_]"  # a letter or a digit
# Longest match wins at every position, as in the Java lexer; on a tie the earlier rule.
_RULES: list[tuple[str, re.Pattern]] = [
    (name, re.compile(pattern))
    for name, pattern in [
        ("url", r"https?://[^\s<>\"(){}|]*[^\s<>\"(){}|.!?,\-]"),
        ("email", r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"),
        ("tag", rf"[#@]{_L}[\w]*"),
        ("abbreviation", r"[A-Za-z]+(?:\.[A-Za-z]+)?\.(?![^\W_])"),  # only those in ABBREVIATIONS (_accepted)
        ("number-abbreviation", r"[Nn][Oo]\.(?=\s*\d)"),
        ("acronym", rf"(?:{_L}\.)+"),  # u.s.a.  p.m.  a.
        ("word", rf"{_A}+(?:[.!?]{_L}{_A}*)*"),  # also end.next and hello!world, as Java does
        ("hyphenated", rf"{_A}(?:{_A}|[.,])*(?:[-_]{_A}+)+"),  # t-shirt 1.5-inch a_b
        ("slashed", r"[A-Za-z0-9]+(?:/[A-Za-z0-9]+){1,2}"),  # and/or 1/2
        ("ampersand", r"[A-Z]+(?:&[A-Z]+)+"),  # AT&T
        ("number", r"[-+]?(?:\d*(?:[.,:]\d+)+|\d+)"),  # -3.5 1,000 10:30
        ("clitic", r"'(?:[sSmMdD]|[rR][eE]|[vV][eE]|[lL][lL])(?![^\W\d_])"),
        ("apostrophe-word", rf"[dDoOlL]'{_A}+|{_L}+[aeiouyAEIOUY]'[aeiouA-Z]{_L}*|[A-HJ-XZ]'{_L}{{2,}}"),
        # 'em 'cause 'til 'till '90s '98 (before a space) 'n 'n'
        (
            "apostrophe-prefix",
            r"'(?:[eE][mM]|[cC][aA][uU][sS][eE]|[tT][iI][lL][lL]?|[2-9]0[sS]|\d\d(?=\s|$)|[nN]'?)"
            r"(?![^\W_])",
        ),
        ("y-apostrophe", r"[yY]'(?=[^\W\d_])"),
        ("t-apostrophe", r"'[tT](?=(?:[iI][sS]|[wW][aA][sS])(?![^\W\d_]))"),  # 'tis -> 't is
        ("ellipsis", r"\.{3,}"),
        ("dashes", r"-{2,}"),
        ("marks", r"[!?]+"),
        ("quote", r"``|''|[\"'`]"),
        ("other", r"\S"),
    ]
]
_PLAIN = re.compile(r"[a-z0-9 ]*")
_BEFORE_NOT = re.compile(r"(?:[A-Za-z]*[A-MO-Za-mo-z])?[nN]")  # don't -> do n't; not 5n't, mann't
CLITIC_ENDINGS = frozenset({"s", "m", "d", "re", "ve", "ll", "t"})
_NOT = re.compile(r"[nN]'[tT](?![^\W\d_])")


def _match(text: str, pos: int) -> tuple[str, str]:
    """The rule name and text of the longest token starting at ``pos`` (the earlier rule on a tie)."""
    best_name, best = "", ""
    for name, rule in _RULES:
        found = rule.match(text, pos)
        if found is None or len(found.group()) <= len(best) or not _accepted(name, found.group()):
            continue
        best_name, best = name, found.group()
    return best_name, best


def _accepted(name: str, token: str) -> bool:
    """Rules whose regular expression says too much: abbreviations come from a list, and an apostrophe
    word never ends in a clitic (``HE'S`` is ``he 's``, ``ma'am`` stays whole)."""
    if name == "abbreviation":
        return token[:-1].lower() in ABBREVIATIONS
    if name == "apostrophe-word":
        return token.split("'", 1)[1].lower() not in CLITIC_ENDINGS
    return True


def ptb_tokens(text: str) -> list[str]:
    """``text`` split into lower-cased Penn-Treebank-style tokens, punctuation still in (quotes as ``''``)."""
    if _PLAIN.fullmatch(text):  # the usual model output: nothing to split but whole words
        return [part for word in text.split() for part in SPLIT_WORDS.get(word, (word,))]
    text = text.replace("&amp;", "&").translate(REWRITES)
    # Java skips what it cannot tokenise (characters beyond the 16-bit range such as emoji, control characters)
    text = "".join(ch for ch in text if ch <= "\uffff" and (ch.isprintable() or ch.isspace()))
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
            continue
        name, token = _match(text, pos)
        end = pos + len(token)
        if name == "word" and _BEFORE_NOT.fullmatch(token) and _NOT.match(text, end - 1):
            tokens += [token[:-1], "n't"] if len(token) > 1 else ["n't"]  # don't -> do n't
            end += 2
        elif name == "word" and token.lower() in SPLIT_WORDS:
            tokens += SPLIT_WORDS[token.lower()]
        elif name == "quote":
            tokens.append(QUOTE)
        elif name == "ellipsis":
            tokens.append("...")
        elif name == "dashes":
            tokens.append("--")
        else:
            tokens.append(BRACKETS.get(token, token))
        pos = end
    return [token.lower() for token in tokens]


@functools.lru_cache(maxsize=1 << 17)
def caption_tokens(text: str) -> tuple[str, ...]:
    """coco-caption's scoring tokens of one caption: :func:`ptb_tokens` without the punctuation it drops."""
    return tuple(token for token in ptb_tokens(text) if token not in DROPPED)


def tokenize(text: str, ptb: bool = True) -> tuple[str, ...]:
    """:func:`caption_tokens`, or (``ptb=False``, for text tokenised already) the text split on whitespace."""
    return caption_tokens(text) if ptb else tuple(text.split())


def tokenize_corpus(
    hypotheses: Sequence[str], references: Sequence[Sequence[str]], ptb: bool = True
) -> tuple[list[tuple[str, ...]], list[list[tuple[str, ...]]]]:
    """Tokens of every hypothesis and of every reference of every item; an item needs one reference at least."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference sets")
    for index, refs in enumerate(references):
        if not refs:
            raise ValueError(f"item {index} has no reference; coco-caption metrics need one at least")
    return [tokenize(h, ptb) for h in hypotheses], [[tokenize(r, ptb) for r in refs] for refs in references]


def ngram_counts(tokens: Sequence[str], max_n: int) -> Counter:
    """How often every n-gram (a tuple of 1 to ``max_n`` tokens) occurs in ``tokens``."""
    counts: Counter = Counter()
    for n in range(1, max_n + 1):
        counts.update(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return counts


def signature(metric: str, ptb: bool, *details: str) -> str:
    """``coco-<metric>|<details>|tok:<tokeniser>|scale:100``: what a coco-caption plugin computed."""
    return "|".join([f"coco-{metric}", *details, f"tok:{TOKENIZER_NAME if ptb else 'none'}", "scale:100"])


class MetricUnavailableError(ZooError, RuntimeError):
    """A metric that needs something this machine lacks was asked for a score."""


def pycocoevalcap_dir() -> Path | None:
    """Where the ``pycocoevalcap`` package is installed (found without importing it), or None."""
    try:
        spec = importlib.util.find_spec("pycocoevalcap")
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]) if locations else None


def java_scorer_unavailable(metric: str, *needed: str) -> str | None:
    """Why pycocoevalcap's Java scorer for ``metric`` cannot run here (``needed``: files inside the package),
    or None."""
    package = pycocoevalcap_dir()
    if package is None:
        return f"{metric} runs pycocoevalcap's Java scorer: pip install pycocoevalcap (and install Java)"
    if shutil.which("java") is None:
        return f"{metric} runs pycocoevalcap's Java scorer: install Java (a JRE with `java` on PATH)"
    missing = [name for name in needed if not (package / name).is_file()]
    if missing:
        return f"{metric} needs {', '.join(str(package / name) for name in missing)}, which pycocoevalcap lacks here"
    return None


class MeanOfItems(Metric):
    """A coco-caption score whose corpus value is the mean of its items' (CIDEr-D, ROUGE-L, METEOR-style).

    A subclass gives :meth:`item_scores`; both read ``Config.tokenize``.
    """

    higher_is_better = True

    @dataclass
    class Config:
        # coco-caption's PTB-style tokenisation; False: texts are tokenised already (split on spaces)
        tokenize: bool = True

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> float:
        scores = self.item_scores(hypotheses, references)
        return sum(scores) / len(scores) if scores else 0.0


class JavaScorer(Metric):
    """A pycocoevalcap Java scorer run on coco-tokenised text; corpus and per-item scores from one run, cached.

    A subclass names the package files it ``needed``, makes the scorer (``_new_scorer``) and runs it
    (``_run``: corpus score and item scores, 0-1); METEOR and SPICE are two.
    """

    higher_is_better = True
    bounds = (0.0, 100.0)
    needed: tuple[str, ...] = ()  # files inside the pycocoevalcap package

    @dataclass
    class Config:
        # coco-caption's PTB-style tokenisation; False: texts are tokenised already (split on spaces)
        tokenize: bool = True

    def __init__(self, cfg: Any) -> None:
        super().__init__(cfg)
        self._scorer: Any = None
        self._last: tuple[Any, tuple[float, list[float]]] | None = None

    @classmethod
    def unavailable(cls) -> str | None:
        return java_scorer_unavailable(cls.registry_entry.name, *cls.needed)

    def _new_scorer(self) -> Any:
        raise NotImplementedError

    def _run(self, scorer: Any, gts: dict, res: dict) -> tuple[float, list[float]]:
        raise NotImplementedError

    def _scores(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> tuple[float, list[float]]:
        key = (tuple(hypotheses), tuple(tuple(refs) for refs in references))
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        reason = self.unavailable()
        if reason:
            raise MetricUnavailableError(reason)
        hyps, refs = tokenize_corpus(hypotheses, references, self.cfg.tokenize)
        if not hyps:
            return 0.0, []
        if self._scorer is None:
            self._scorer = self._new_scorer()
        gts = {i: [" ".join(r) for r in item_refs] for i, item_refs in enumerate(refs)}
        res = {i: [" ".join(h)] for i, h in enumerate(hyps)}
        corpus, items = self._run(self._scorer, gts, res)
        result = (100.0 * corpus, [100.0 * score for score in items])
        self._last = (key, result)
        return result

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> float:
        return self._scores(hypotheses, references)[0]

    def item_scores(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
        return self._scores(hypotheses, references)[1]
