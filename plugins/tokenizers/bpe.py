"""The ``bpe`` tokenizer: byte-pair-encoding subwords (Sennrich et al., 2016)."""

from dataclasses import dataclass

from tokenizers import Tokenizer as HFPipeline
from tokenizers import decoders, models, pre_tokenizers, trainers

from zoo.api import SPECIAL_TOKENS, at_least, register
from zoo.api.text import HFTokenizer


@register("tokenizer", "bpe")
class BPETokenizer(HFTokenizer):
    """Subword units learnt by byte-pair encoding (Sennrich, Haddow & Birch, 2016).

    Training starts from characters and repeatedly merges the most frequent
    adjacent pair until ``vocab_size`` entries exist, so frequent words become
    one token and rare ones split into stems and suffixes.

    Pipeline: the ``Metaspace`` pre-tokenizer replaces each space by "▁" and
    glues it to the following word ("the cats" -> "▁the", "▁cats"), so word
    boundaries live inside the tokens and the ``Metaspace`` decoder restores
    the text exactly: decode(encode(s)) == s for single-spaced text. Characters
    never seen in training become <unk>.
    """

    encodes_words_apart = True  # the pre-tokenizer splits at spaces first

    @dataclass
    class Config:
        vocab_size: int = 8000  # total vocabulary, special tokens and characters included
        min_frequency: int = 2  # a pair must occur this often to be merged
        lowercase: bool = False  # lowercase text before splitting it

        def __post_init__(self) -> None:
            at_least(
                self, "vocab_size", len(SPECIAL_TOKENS) + 1, f"the {len(SPECIAL_TOKENS)} special tokens come first"
            )
            at_least(self, "min_frequency", 1)

    def pipeline(self) -> HFPipeline:
        pipeline = HFPipeline(models.BPE(unk_token="<unk>"))
        pipeline.normalizer = self.lowercase_normalizer(self.cfg.lowercase)
        pipeline.pre_tokenizer = pre_tokenizers.Metaspace()
        pipeline.decoder = decoders.Metaspace()
        return pipeline

    def trainer(self) -> trainers.Trainer:
        return trainers.BpeTrainer(
            vocab_size=self.cfg.vocab_size,
            min_frequency=self.cfg.min_frequency,
            special_tokens=list(SPECIAL_TOKENS),
            show_progress=False,
        )
