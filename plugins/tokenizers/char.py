"""The ``char`` tokenizer: every character (spaces included) is one token."""

from dataclasses import dataclass

from tokenizers import Regex, decoders, models, pre_tokenizers, trainers
from tokenizers import Tokenizer as HFPipeline

from zoo.api import SPECIAL_TOKENS, at_least, register
from zoo.api.text import HFTokenizer


@register("tokenizer", "char")
class CharTokenizer(HFTokenizer):
    """One token per character; decode(encode(s)) == s, spaces included.

    Pipeline: each character is split off on its own (a ``Split`` pre-tokenizer
    on the regex ``.``), looked up in a character vocabulary (``WordLevel``), and
    decoding concatenates the pieces again (``Fuse``), so "the cat" -> t h e ␣ c a t.
    """

    @dataclass
    class Config:
        min_frequency: int = 1  # characters seen fewer times in training become <unk>
        lowercase: bool = False  # lowercase text before splitting it

        def __post_init__(self) -> None:
            at_least(self, "min_frequency", 1)

    def pipeline(self) -> HFPipeline:
        pipeline = HFPipeline(models.WordLevel(unk_token="<unk>"))
        pipeline.normalizer = self.lowercase_normalizer(self.cfg.lowercase)
        pipeline.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
        pipeline.decoder = decoders.Fuse()
        return pipeline

    def trainer(self) -> trainers.Trainer:
        return trainers.WordLevelTrainer(
            min_frequency=self.cfg.min_frequency, special_tokens=list(SPECIAL_TOKENS), show_progress=False
        )
