"""Third-party plugins as their authors would write them: module sources that tests write into plugin folders or
installed packages."""

SCORER_PLUGIN = '''
from dataclasses import dataclass

import torch
from torch import nn

from zoo import register
from zoo.contracts import Attention


@register("attention", "negdist")
class NegativeDistance(Attention):
    """Negative squared distance between query and key."""

    @dataclass
    class Config:
        scale: float = 1.0

    def __init__(self, cfg, query_dim, key_dim, heads=1):
        super().__init__()
        self.scale = cfg.scale
        self.key_proj = nn.Linear(key_dim, query_dim) if key_dim != query_dim else nn.Identity()

    def forward(self, q, k):
        return -self.scale * torch.cdist(q, self.key_proj(k)).pow(2)
'''

ENCODER_PLUGIN = '''
from dataclasses import dataclass

from torch import nn

from zoo import register
from zoo.contracts import Encoder, EncoderOutput


@register("encoder", "bag")
class BagOfVectors(Encoder):
    """Each position sees only itself: a position-wise MLP."""

    @dataclass
    class Config:
        hidden_size: int = 64

    def __init__(self, cfg, input_dim):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(input_dim, cfg.hidden_size), nn.Tanh())
        self.output_dim = self.state_dim = cfg.hidden_size

    def forward(self, x, mask):
        memory = self.mlp(x) * mask[..., None]
        state = memory.sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        return EncoderOutput(memory, mask, state)
'''

# Both in one module, as a third party might ship them.
PLUGIN = SCORER_PLUGIN + ENCODER_PLUGIN

# A task with a kind of source zoo has never seen (lists of whole numbers, to be written out sorted), with its
# dataset and frontend: it trains, compares, reports and predicts through zoo.api alone (the plugin_run fixture).
NUMBERS_PLUGIN = '''
"""The ``sorting`` task: a list of whole numbers in, the same numbers in order out."""
import random
from dataclasses import dataclass

import torch
from torch import nn

from zoo.api import (
    PAD,
    SPECIAL_TOKENS,
    Dataset,
    Frontend,
    Item,
    PredictCommand,
    SourceDescription,
    Task,
    TaskError,
    load_tokenizer,
    pad,
    register,
    save_tokenizer,
    tokenizer_path,
    train_tokenizer,
)

LARGEST = 9  # numbers run from 0 to LARGEST; number n is source id len(SPECIAL_TOKENS) + n


@register("dataset", "number_lists")
class NumberLists(Dataset):
    """Random lists of 1-6 numbers; the reference is the list sorted."""

    source_kind = "numbers"

    @dataclass
    class Config:
        train_size: int = 200
        val_size: int = 20
        test_size: int = 20
        seed: int = 0

    def splits(self):
        rng = random.Random(self.cfg.seed)
        sizes = {"train": self.cfg.train_size, "val": self.cfg.val_size, "test": self.cfg.test_size}
        lists = {split: [[rng.randint(0, LARGEST) for _ in range(rng.randint(1, 6))] for _ in range(size)]
                 for split, size in sizes.items()}
        return {split: [Item(f"{split}-{k}", numbers, (" ".join(map(str, sorted(numbers))),))
                        for k, numbers in enumerate(rows)] for split, rows in lists.items()}


@register("frontend", "numbers")
class NumberEmbedding(Frontend):
    """One learned vector per number."""

    source_kind = "numbers"

    @dataclass
    class Config:
        dim: int | None = None  # null: the encoder's width

    def __init__(self, cfg, source):
        super().__init__()
        self.output_dim = cfg.dim
        self.embedding = nn.Embedding(source.vocab_size, cfg.dim, padding_idx=PAD)

    def forward(self, source):
        return self.embedding(source), source != PAD

    @classmethod
    def example_source(cls, batch):
        ids = torch.randint(len(SPECIAL_TOKENS), len(SPECIAL_TOKENS) + LARGEST + 1, (batch, 5))
        return SourceDescription("numbers", vocab_size=len(SPECIAL_TOKENS) + LARGEST + 1), ids, None


@register("task", "sorting")
class Sorting(Task):
    """Sort a list of whole numbers; exact matches by list length."""

    source_kind = "numbers"
    frontend_kinds = ("numbers",)
    default_metrics = ("chrf",)
    default_monitor = "chrf"
    component_defaults = {"dataset": "number_lists", "frontend": "numbers"}
    command = PredictCommand("sort", "sort lists of whole numbers with a sorting run", input="list")

    @dataclass
    class Config:
        slack: int = 2  # an output may have this many tokens more than its list

    def fit(self, train):
        self.target_tokenizer = train_tokenizer(self.tokenizer_cfg, (ref for item in train for ref in item.references))

    def save(self, run_dir):
        save_tokenizer(self.target_tokenizer, tokenizer_path(run_dir, "target"))

    def saved(self, run_dir):
        return tokenizer_path(run_dir, "target").is_file()

    def load(self, run_dir):
        self.target_tokenizer = load_tokenizer(self.tokenizer_cfg, tokenizer_path(run_dir, "target"))

    def source_description(self):
        return SourceDescription("numbers", vocab_size=len(SPECIAL_TOKENS) + LARGEST + 1)

    def read_input(self, text):
        words = text.split()
        if not all(word.isdigit() and int(word) <= LARGEST for word in words):
            raise TaskError(f"{text.strip()!r} is not a list of whole numbers from 0 to {LARGEST}; space them")
        return [int(word) for word in words]

    def encode_sources(self, sources):
        return [[len(SPECIAL_TOKENS) + n for n in numbers] for numbers in sources]

    def source_size(self, encoded):
        return len(encoded)

    def collate_sources(self, encoded):
        return pad(encoded)

    def source_labels(self, encoded):
        return [str(i - len(SPECIAL_TOKENS)) for i in encoded]

    def output_limit(self, source):
        return (source != PAD).sum(1) + self.cfg.slack

    def describe_source(self, item):
        return " ".join(map(str, item.source))

    def breakdowns(self, items, hypotheses):
        counts = {}
        for item, hypothesis in zip(items, hypotheses):
            bucket = "1-3" if len(item.source) <= 3 else "4-6"
            exact, total = counts.get(bucket, (0, 0))
            counts[bucket] = (exact + (hypothesis in item.references), total + 1)
        return {"exact_by_length": {b: {"exact": 100 * e / n, "count": n} for b, (e, n) in sorted(counts.items())}}
'''
