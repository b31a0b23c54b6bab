"""How long self-critical training's rewards take against the model's share of a step.

A step of ``experiment=flickr8k_scst`` scores, for each of its images, k sampled captions and the greedy
caption with CIDEr-D against the image's references. This measures that scoring on synthetic Flickr8k-like
captions (5 references an image, about 12 words each, a Zipf vocabulary of 2,500 words, 6,000 training
images for the document frequencies) for a batch of ``--items`` images x ``--samples`` samples plus the
greedy captions, three ways:

- ``item_scores``: the metric's evaluation form, document frequencies from the scored batch itself;
- ``reward``: the form SCST uses (:meth:`CiderD.reward`), document frequencies fixed on the training
  references, each distinct hypothesis and reference set weighted once per call;
- the training references' document frequencies, counted once per run.

For scale it times the model's part of the same step on this machine (the preset's LSTM captioner over 7 x 7
EfficientNet-Lite0 features, untrained, outputs up to ``--max-len`` tokens): sampling and greedy decoding
without gradients, then the samples teacher-forced forward and backward.

    python benchmarks/scst_rewards.py [--items 50] [--samples 5] [--repeats 5] [--max-len 16] [--model-steps 3]
                                      [--threads N]
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import time
from collections.abc import Callable

import torch
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import zoo.config.schema  # noqa: F401  (stores the schema)
from zoo.contracts import SourceDescription
from zoo.decoding import greedy, sample
from zoo.model import Seq2Seq
from zoo.registry import build, default_config, discovery
from zoo.training.scst import sequence_log_probs

VOCABULARY = 2_500
TRAIN_IMAGES = 6_000
REFERENCES = 5
TARGET_VOCABULARY = 2_600  # about the preset's word vocabulary (min_frequency 5) on Flickr8k


class Captions:
    """Caption-like word sequences: each image has a few topic words its captions share, the rest is drawn from a
    Zipf distribution over the vocabulary, as function words and common nouns are in real captions."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.words = [f"w{k}" for k in range(VOCABULARY)]
        self.weights = [1 / (k + 1) for k in range(VOCABULARY)]

    def topic(self) -> list[str]:
        return self.rng.choices(self.words, self.weights, k=6)

    def caption(self, topic: list[str]) -> str:
        length = min(30, max(3, round(self.rng.gauss(11.8, 3.8))))
        return " ".join(
            self.rng.choice(topic) if self.rng.random() < 0.4 else self.rng.choices(self.words, self.weights)[0]
            for _ in range(length)
        )


def best_seconds(work: Callable[[], object], repeats: int) -> float:
    """The fastest of ``repeats`` runs (the least disturbed by other work on the machine)."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def model_step_seconds(items: int, samples: int, max_len: int, steps: int) -> float:
    """The median seconds of the model's part of one SCST step of the preset's captioner."""
    with initialize_config_module("zoo.conf", version_base="1.3"):
        cfg = compose("config", overrides=["experiment=flickr8k_scst", "frontend=features", "task.features=x.npy"])
    source = SourceDescription("features", feature_dim=1280, height=7, width=7)
    model = Seq2Seq(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True), source, TARGET_VOCABULARY)
    optimiser = torch.optim.AdamW(model.parameters(), lr=5e-5)
    features = torch.randn(items, 49, 1280)

    def step() -> None:
        model.eval()
        outputs = sample(model, features, max_len=max_len, count=samples)
        greedy(model, features, max_len=max_len)
        model.train()
        log_probs, _ = sequence_log_probs(model, features, outputs, torch.full((items,), max_len))
        (-log_probs.mean()).backward()
        optimiser.step()
        optimiser.zero_grad()

    step()  # warm-up
    return statistics.median(best_seconds(step, 1) for _ in range(steps))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=50)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--max-len", type=int, default=16)
    parser.add_argument("--model-steps", type=int, default=3, help="model steps timed (their median), after one more")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    discovery.discover()
    metric = build("metric", default_config("metric", "cider_d"))

    captions = Captions(seed=0)
    train_topics = [captions.topic() for _ in range(TRAIN_IMAGES)]
    train = [[captions.caption(topic) for _ in range(REFERENCES)] for topic in train_topics]
    topics = [captions.topic() for _ in range(args.items)]
    references = [tuple(captions.caption(topic) for _ in range(REFERENCES)) for topic in topics]
    scored = [refs for refs in references for _ in range(args.samples)] + references
    # Every call scores new captions (a step's samples are new), all distinct (the worst case: none is scored twice)
    batches = iter(
        [
            [captions.caption(topic) for topic in topics for _ in range(args.samples)]
            + [captions.caption(topic) for topic in topics]
            for _ in range(2 * args.repeats)
        ]
    )

    started = time.perf_counter()
    reward = metric.reward(train)
    df_seconds = time.perf_counter() - started
    item_seconds = best_seconds(lambda: metric.item_scores(next(batches), scored), args.repeats)
    reward_seconds = best_seconds(lambda: reward(next(batches), scored), args.repeats)
    model_seconds = model_step_seconds(args.items, args.samples, args.max_len, args.model_steps)

    print(f"{platform.processor() or platform.machine()}, torch {torch.__version__}, {args.threads} thread(s)")
    print(
        f"batch: {args.items} images x {args.samples} samples + {args.items} greedy = {len(scored)} captions, "
        f"{REFERENCES} references each\n"
    )
    print("| what | ms per batch | captions/s | share of the model's step |")
    print("|---|---|---|---|")
    for what, seconds in (
        ("CIDEr-D `item_scores` (df from the batch)", item_seconds),
        ("CIDEr-D `reward` (df of the training split)", reward_seconds),
    ):
        print(f"| {what} | {seconds * 1e3:.1f} | {len(scored) / seconds:,.0f} | {seconds / model_seconds:.1%} |")
    print(f"| model: sample, greedy, teacher-forced forward + backward | {model_seconds * 1e3:.0f} | | 100% |")
    print(f"\ntraining df over {TRAIN_IMAGES:,} images x {REFERENCES} references: {df_seconds:.2f} s, once per run")


if __name__ == "__main__":
    main()
