"""The ``word`` tokenizer: one token per word or punctuation mark."""

from tokenizers import Tokenizer as HFPipeline
from tokenizers import models, pre_tokenizers, trainers

from zoo.api import SPECIAL_TOKENS, register
from zoo.api.text import HFTokenizer

from .word_config import WordConfig


@register("tokenizer", "word")
class WordTokenizer(HFTokenizer):
    """Whole words (and punctuation marks) as tokens; words unseen in training become <unk>.

    Pipeline: the ``Whitespace`` pre-tokenizer splits on spaces and splits
    punctuation off words (regex ``\\w+|[^\\w\\s]+``), a ``WordLevel`` model looks
    each piece up, and decoding joins the pieces with single spaces. Text that is
    already space-separated round-trips exactly; "cat." comes back as "cat ."
    (sacreBLEU's default 13a tokenisation splits punctuation the same way).
    """

    encodes_words_apart = True  # the pre-tokenizer splits at spaces first

    Config = WordConfig

    def pipeline(self) -> HFPipeline:
        pipeline = HFPipeline(models.WordLevel(unk_token="<unk>"))
        pipeline.normalizer = self.lowercase_normalizer(self.cfg.lowercase)
        pipeline.pre_tokenizer = pre_tokenizers.Whitespace()
        return pipeline

    def trainer(self) -> trainers.Trainer:
        return trainers.WordLevelTrainer(
            min_frequency=self.cfg.min_frequency, special_tokens=list(SPECIAL_TOKENS), show_progress=False
        )
