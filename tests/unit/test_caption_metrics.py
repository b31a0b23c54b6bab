"""Captioning metrics (bleu1-4, cider_d, rouge_l, meteor, spice) against pycocoevalcap, their tokeniser, and
metrics that cannot run here.

pycocoevalcap is a dev extra: the tests that need it, or Java, skip cleanly without them.
"""

import importlib
import logging
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass

import pytest

from zoo import registry
from zoo.contracts import Metric
from zoo.metrics.coco import MetricUnavailableError, caption_tokens, pycocoevalcap_dir
from zoo.registry import discovery
from zoo.training.evaluation import MetricChoiceError, MetricSuite

discovery.discover()

TOL = 1e-6  # on coco-caption's own scale (our plugins report 100 times that)
COCO_METRICS = ["bleu1", "bleu2", "bleu3", "bleu4", "cider_d", "rouge_l", "meteor", "spice"]


def tokenised_corpus() -> tuple[list[str], list[tuple[str, ...]]]:
    """Lower-case, punctuation-free captions (what coco-caption's tokeniser leaves): hand-written edge cases
    (empty and 1-3 word hypotheses, a hypothesis equal to a reference, repeated words, one to five references)
    and seeded random ones from a small vocabulary, so n-grams overlap partly."""
    hypotheses = [
        "a man riding a wave on top of a surfboard",
        "",
        "dog",
        "a cat",
        "two dogs play",
        "a a a a a a",
        "the the cat sat on the mat",
        "a plate of food with broccoli and rice",
        "a red bus parked on the side of a street",
        "a person",
    ]
    references = [
        ("a man riding a wave on top of a surfboard", "a surfer rides a large wave", "a person surfing in the ocean"),
        ("a dog runs across the grass", "a brown dog in a field"),
        ("a dog lying on a couch",),
        ("a cat sitting on a window sill", "a black cat looks outside", "the cat is on the window", "a cat", "cat"),
        ("two dogs playing with a frisbee in the park", "two dogs play together"),
        ("a man holding a red umbrella", "a man with an umbrella"),
        ("the cat sat on the mat", "a cat is sitting on a mat"),
        ("a plate with rice and broccoli", "food on a white plate", "a meal of rice chicken and broccoli"),
        ("a bus on a city street", "a red double decker bus", "a bus parked beside the road", "a big red bus"),
        ("a woman walking down the street with a bag", "a person walking"),
    ]
    rng = random.Random(0)
    vocabulary = "a the man woman dog cat on in with of red blue big small sitting standing near street table".split()
    for _ in range(26):
        refs = tuple(
            " ".join(rng.choice(vocabulary) for _ in range(rng.randint(3, 11))) for _ in range(rng.randint(1, 5))
        )
        base = rng.choice(refs).split()
        hypothesis = [w if rng.random() < 0.6 else rng.choice(vocabulary) for w in base[: rng.randint(0, len(base))]]
        hypotheses.append(" ".join(hypothesis))
        references.append(refs)
    return hypotheses, references


def coco_inputs(hypotheses, references) -> tuple[dict, dict]:
    """pycocoevalcap's inputs: references (gts) and hypotheses (res) by item id."""
    return {i: list(refs) for i, refs in enumerate(references)}, {i: [h] for i, h in enumerate(hypotheses)}


def metric(name: str, **options) -> Metric:
    return registry.build("metric", {**registry.default_config("metric", name), **options})


def assert_agrees(name: str, hypotheses, references, coco_corpus: float, coco_items) -> None:
    plugin = metric(name)
    assert plugin.corpus_score(hypotheses, references) / 100 == pytest.approx(coco_corpus, abs=TOL)
    items = [score / 100 for score in plugin.item_scores(hypotheses, references)]
    assert items == pytest.approx([float(s) for s in coco_items], abs=TOL)


def java_missing() -> str | None:
    if pycocoevalcap_dir() is None:
        return "pycocoevalcap is not installed (dev extra)"
    return None if shutil.which("java") else "no Java"


# ------------------------------------------------------------------ tokeniser
@pytest.mark.parametrize(
    "text, tokens",  # expected tokens as the Java PTBTokenizer + coco-caption's punctuation removal give them
    [
        ("A man riding a wave on top of a surfboard.", "a man riding a wave on top of a surfboard"),
        ("Two dogs' toys aren't here, it's the cat's.", "two dogs toys are n't here it 's the cat 's"),
        ("I can't, won't; we'll. Cannot gonna", "i ca n't wo n't we 'll can not gon na"),
        (
            '"Quoted" text (with parens) -- dash - black-and-white!',
            "quoted text -lrb- with parens -rrb- dash black-and-white",
        ),
        (
            "Mr. Smith at 3:30 p.m. on St. Patrick's day... costs $5.50 & 1,000 items/day 50% off!?",
            "mr. smith at 3:30 p.m. on st. patrick 's day costs $ 5.50 & 1,000 items/day 50 % off !?",
        ),
        ("“Hello,” she said. ‘Hi’ he’s don’t …", "hello she said hi he 's do n't"),
        ("he said no. No. 5 in the U.S. army", "he said no no. 5 in the u.s. army"),
        ("rock 'n' roll at 5 o'clock, y'all", "rock 'n' roll at 5 o'clock y' all"),
        ("  A  DOG\tRUNS \n", "a dog runs"),
        ("...", ""),
    ],
)
def test_tokeniser_examples(text, tokens):
    assert " ".join(caption_tokens(text)) == tokens


RAW_CAPTIONS = [
    "A man riding a wave on top of a surfboard.",
    "Two dogs' toys aren't here, it's the cat's!",
    'A "red" bus (double-decker) parked on Main St. in the U.S.',
    "I can't see; there's a dog... and a cat?",
    "A black-and-white photo of 3.5 kids, 1,000 birds -- and Mr. Smith's hat.",
    "“Curly” quotes, ‘single’ ones and don’t — dashes – too.",
    "",
    "  Spaces\tand CAPITALS  ",
]


@pytest.mark.slow
def test_tokeniser_agrees_with_the_java_ptbtokenizer():
    reason = java_missing()
    if reason:
        pytest.skip(reason)
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    java = PTBTokenizer().tokenize({i: [{"caption": c}] for i, c in enumerate(RAW_CAPTIONS)})
    assert [" ".join(caption_tokens(c)) for c in RAW_CAPTIONS] == [java[i][0] for i in range(len(RAW_CAPTIONS))]


# ------------------------------------------------------------------ agreement with pycocoevalcap
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_bleu_agrees_with_pycocoevalcap(n):
    pytest.importorskip("pycocoevalcap")
    from pycocoevalcap.bleu.bleu import Bleu

    hypotheses, references = tokenised_corpus()
    corpus, items = Bleu(4).compute_score(*coco_inputs(hypotheses, references), verbose=0)
    assert_agrees(f"bleu{n}", hypotheses, references, corpus[n - 1], items[n - 1])


def test_cider_d_agrees_with_pycocoevalcap():
    pytest.importorskip("pycocoevalcap")
    from pycocoevalcap.cider.cider import Cider

    hypotheses, references = tokenised_corpus()
    assert_agrees("cider_d", hypotheses, references, *Cider().compute_score(*coco_inputs(hypotheses, references)))


def test_rouge_l_agrees_with_pycocoevalcap():
    pytest.importorskip("pycocoevalcap")
    from pycocoevalcap.rouge.rouge import Rouge

    hypotheses, references = tokenised_corpus()
    assert_agrees("rouge_l", hypotheses, references, *Rouge().compute_score(*coco_inputs(hypotheses, references)))


@pytest.mark.slow
def test_meteor_agrees_with_pycocoevalcap():
    reason = registry.get("metric", "meteor").cls.unavailable()
    if reason:
        pytest.skip(reason)
    hypotheses, references = tokenised_corpus()
    plugin = metric("meteor")
    ours = plugin.corpus_score(hypotheses, references), plugin.item_scores(hypotheses, references)
    # pycocoevalcap's Meteor on coco's inputs, through the Java process the plugin started (it takes seconds to start)
    corpus, items = plugin._scorer.compute_score(*coco_inputs(hypotheses, references))
    assert ours[0] / 100 == pytest.approx(corpus, abs=TOL)
    assert [score / 100 for score in ours[1]] == pytest.approx(items, abs=TOL)


def test_raw_captions_score_as_coco_caption_scores_them():
    """The whole pipeline on raw text: our tokeniser and scorers against PTBTokenizer (Java) and coco's scorers."""
    reason = java_missing()
    if reason:
        pytest.skip(reason)
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    hypotheses = RAW_CAPTIONS
    references = [tuple(RAW_CAPTIONS[(i + k) % len(RAW_CAPTIONS)] for k in range(1, 1 + i % 3 + 1)) for i in range(8)]
    gts, res = coco_inputs(hypotheses, references)
    tokenizer = PTBTokenizer()
    gts = tokenizer.tokenize({i: [{"caption": c} for c in refs] for i, refs in gts.items()})
    res = tokenizer.tokenize({i: [{"caption": h[0]}] for i, h in res.items()})
    bleu, bleu_items = Bleu(4).compute_score(gts, res, verbose=0)
    assert_agrees("bleu4", hypotheses, references, bleu[3], bleu_items[3])
    assert_agrees("cider_d", hypotheses, references, *Cider().compute_score(gts, res))
    assert_agrees("rouge_l", hypotheses, references, *Rouge().compute_score(gts, res))


# ------------------------------------------------------------------ plugin behaviour
def test_every_coco_metric_states_direction_scale_and_tokeniser():
    for name in COCO_METRICS:
        plugin = metric(name)
        assert plugin.higher_is_better
        assert plugin.signature().startswith("coco-") and plugin.signature().endswith("|tok:ptb-nojava|scale:100")
        assert "|tok:none|" in metric(name, tokenize=False).signature()


def test_a_perfect_caption_scores_100_and_an_empty_corpus_0():
    references = [("a dog runs in the big green park", "a dog in a park"), ("two cats sleep on a red sofa",)]
    hypotheses = [refs[0] for refs in references]
    for name in ["bleu1", "bleu4", "rouge_l"]:
        assert metric(name).corpus_score(hypotheses, references) == pytest.approx(100.0)
        assert metric(name).corpus_score([], []) == 0.0


def test_an_item_without_references_is_an_error():
    with pytest.raises(ValueError, match="item 1 has no reference"):
        metric("bleu4").corpus_score(["a dog", "a cat"], [("a dog",), ()])


@pytest.mark.slow
def test_the_package_never_imports_pycocoevalcap_for_its_own_scorers():
    script = (
        "import sys\n"
        "from zoo.registry import discovery, build, default_config\n"
        "discovery.discover()\n"
        "for name in ['bleu4', 'cider_d', 'rouge_l', 'meteor', 'spice']:\n"
        "    m = build('metric', default_config('metric', name)); m.unavailable(); m.signature()\n"
        "for name in ['bleu4', 'cider_d', 'rouge_l']:\n"
        "    build('metric', default_config('metric', name)).corpus_score(['a dog.'], [('A dog!', 'a cat')])\n"
        "print(sorted(m for m in sys.modules if m.startswith('pycocoevalcap')))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


# ------------------------------------------------------------------ metrics that cannot run here
@pytest.fixture
def unavailable_metric(monkeypatch):
    """A metric that says it cannot run, registered for one test only."""
    entries = importlib.import_module("zoo.registry.entries")
    monkeypatch.setattr(entries, "_ENTRIES", dict(entries._ENTRIES))

    @registry.register("metric", "needs_the_moon")
    class NeedsTheMoon(Metric):
        """A metric that is never available."""

        @dataclass
        class Config:
            pass

        @classmethod
        def unavailable(cls):
            return "needs the moon: install a moon"

        def corpus_score(self, hypotheses, references):
            raise AssertionError("an unavailable metric must not be built")

    return "needs_the_moon"


def suite(**chosen) -> MetricSuite:
    return MetricSuite({"task": {"name": "translation"}, "metrics": None, "monitor": None, **chosen})


def test_an_unavailable_metric_is_left_out_with_a_warning(unavailable_metric, caplog):
    with caplog.at_level(logging.WARNING, logger="zoo.training.evaluation"):
        metrics = suite(metrics=["bleu4", unavailable_metric], monitor="bleu4")
    assert list(metrics.metrics) == ["bleu4"] and metrics.unavailable == {
        unavailable_metric: "needs the moon: install a moon"
    }
    assert "needs_the_moon left out: needs the moon: install a moon" in caplog.text
    assert set(metrics.scores(["a dog"], [("a dog",)])) == {"bleu4"}


def test_an_unavailable_monitor_is_refused_in_one_line(unavailable_metric):
    with pytest.raises(
        MetricChoiceError, match="monitored metric needs_the_moon cannot run here: needs the moon"
    ) as error:
        suite(metrics=["bleu4"], monitor=unavailable_metric)
    assert "\n" not in str(error.value)


def test_spice_is_unavailable_rather_than_downloading_corenlp():
    spice = registry.get("metric", "spice").cls
    package = pycocoevalcap_dir()
    if package is None or (package / "spice/lib/stanford-corenlp-3.6.0.jar").is_file():
        pytest.skip("only where pycocoevalcap lacks the Stanford CoreNLP jars SPICE would download")
    assert "Stanford CoreNLP" in spice.unavailable() and "\n" not in spice.unavailable()
    with pytest.raises(MetricUnavailableError, match="never does"):
        metric("spice").corpus_score(["a dog"], [("a dog",)])
