"""Greedy search, beam search and sampling on a fake decoder whose probabilities are a fixed table."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from torch import nn

from zoo.config.checks import ConfigError
from zoo.config.sections import DecodeConfig
from zoo.contracts import BOS, EOS, PAD, UNK, Decoder, EncoderOutput, SourceDescription
from zoo.decoding import (
    DecodingError,
    beam_search,
    filter_logits,
    generate,
    greedy,
    length_normalised,
    max_output_len,
    sample,
)

A, B_, C, D = 4, 5, 6, 7  # the four ordinary tokens of the fake vocabulary
VOCAB = 8
ALLOWED = (EOS, UNK, A, B_, C, D)  # every id except PAD and BOS, which are never generated


class TableDecoder(Decoder):
    """Next-token probabilities ``table[ctx, prev, cur]`` for the step input ``cur`` and the
    token ``prev`` before it (kept in the cache, so beam search must reorder it).
    ``ctx`` is the first source token modulo the number of tables."""

    def __init__(self, table: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("log_table", table.log())
        self.calls: list[int] = []  # rows per step call

    def init_cache(self, enc: EncoderOutput) -> dict:
        return {"prev": torch.full((enc.memory.size(0),), BOS, dtype=torch.long)}

    def step(self, y_t, enc, cache, t):
        self.calls.append(y_t.size(0))
        ctx = enc.memory[:, 0, 0].long() % self.log_table.size(0)
        logits = self.log_table[ctx, cache["prev"], y_t]
        return logits, {"prev": y_t}, None


class TableModel(nn.Module):
    def __init__(self, table: torch.Tensor) -> None:
        super().__init__()
        self.decoder = TableDecoder(table)

    def encode(self, source: torch.Tensor) -> EncoderOutput:
        return EncoderOutput(memory=source.float()[..., None], mask=source != PAD, state=torch.zeros(source.size(0), 1))


def row(**probs: float) -> torch.Tensor:
    """A next-token distribution over ALLOWED: given probabilities by token letter or name,
    the remaining mass spread evenly over the other allowed tokens."""
    names = {"eos": EOS, "unk": UNK, "a": A, "b": B_, "c": C, "d": D}
    p = torch.zeros(VOCAB, dtype=torch.float64)
    for name, value in probs.items():
        p[names[name]] = value
    rest = [i for i in ALLOWED if p[i] == 0]
    p[rest] = (1.0 - sum(probs.values())) / len(rest)
    return p


def model_from_rows(rows: dict[int, torch.Tensor]) -> TableModel:
    """A single-context, previous-token-independent table: rows[cur] = p(next | cur)."""
    table = torch.stack([rows.get(cur, row(eos=0.9)) for cur in range(VOCAB)])  # (cur, next)
    return TableModel(table.expand(VOCAB, VOCAB, VOCAB)[None].float().contiguous())


def random_model(contexts: int = 3, seed: int = 0, eos_bias: float = 0.0) -> TableModel:
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(contexts, VOCAB, VOCAB, VOCAB, generator=g) * 2
    logits[..., EOS] += eos_bias
    logits[..., [PAD, BOS]] = float("-inf")
    return TableModel(logits.softmax(-1))


def src(*rows: list[int]) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [PAD] * (width - len(r)) for r in rows])


# --------------------------------------------------------------------------- greedy / beam basics
def test_beam_finds_a_more_probable_sentence_than_greedy():
    # Greedy: BOS -> a (0.6) -> EOS (0.4) = 0.24; better: BOS -> b (0.4) -> EOS (0.9) = 0.36.
    model = model_from_rows({BOS: row(a=0.6, b=0.4), A: row(eos=0.4, c=0.32, d=0.28), B_: row(eos=0.9)})
    source = src([A, C])
    assert greedy(model, source, max_len=5) == [[A]]
    assert beam_search(model, source, beam_size=2, max_len=5) == [[B_]]


def test_greedy_stops_when_all_sentences_end_and_respects_max_len():
    model = model_from_rows({BOS: row(a=0.9), A: row(eos=0.9)})
    assert greedy(model, src([A]), max_len=10) == [[A]]
    assert model.decoder.calls == [1, 1]  # BOS -> a, a -> EOS, then it stops

    never_ends = model_from_rows({cur: row(c=0.9, eos=1e-9) for cur in range(VOCAB)})
    limits = torch.tensor([2, 5])
    assert greedy(never_ends, src([A], [A]), max_len=limits) == [[C] * 2, [C] * 5]
    assert beam_search(never_ends, src([A], [A]), beam_size=3, max_len=limits) == [[C] * 2, [C] * 5]
    assert sample(never_ends, src([A], [A]), top_k=1, max_len=3) == [[C] * 3, [C] * 3]


def final_score(model: TableModel, first_token: int, ids: list[int], limit: int, penalty: str, alpha: float) -> float:
    """The score beam search ranks by: the summed log-probability of ``ids`` and their EOS (none
    when cut at ``limit``) under the table for source ``[first_token, ...]``, length-normalised."""
    tokens = ids + [EOS] if len(ids) < limit else ids
    log_table = model.decoder.log_table[first_token % model.decoder.log_table.size(0)].double()
    total, prev, cur = 0.0, BOS, BOS
    for token in tokens:
        total += float(log_table[prev, cur, token])
        prev, cur = cur, token
    return length_normalised(total, len(tokens), penalty, alpha)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_size_one_follows_greedy(seed):
    """One beam holds greedy's sequence until it ends. Ranked by the raw sum (gnmt, alpha=0) no live
    hypothesis can beat it then, so the output is greedy's; under a length penalty a live runner-up
    still may, so beam 1 scores at least as high as greedy."""
    model = random_model(seed=seed, eos_bias=1.0)
    sentences = [[9, A], [1, B_, C], [2], [3, D, D, D]]
    source = src(*sentences)
    max_len = torch.tensor([4, 6, 3, 8])
    expected = greedy(model, source, max_len=max_len)
    assert beam_search(model, source, beam_size=1, alpha=0.0, max_len=max_len) == expected
    assert any(len(h) < m for h, m in zip(expected, max_len.tolist()))  # some sentences do end with EOS
    for penalty, alpha in (("gnmt", 0.6), ("average", 0.0)):
        beams = beam_search(model, source, beam_size=1, length_penalty=penalty, alpha=alpha, max_len=max_len)
        for sentence, hyp, greedy_hyp, limit in zip(sentences, beams, expected, max_len.tolist()):
            beam_score, greedy_score = (
                final_score(model, sentence[0], ids, limit, penalty, alpha) for ids in (hyp, greedy_hyp)
            )
            assert beam_score >= greedy_score - 1e-6


def test_beam_steps_live_sentences_together_and_drops_finished_ones():
    """One step call per time step on every live sentence's k rows; a sentence that is done
    (here: at its limit of 1) leaves the batch, and the others decode as they would alone."""
    model = random_model(seed=3)
    together = beam_search(model, src([9, A], [1]), beam_size=3, max_len=torch.tensor([1, 4]))
    calls = list(model.decoder.calls)
    assert calls[0] == 2 * 3 and calls[1:] and set(calls[1:]) == {3} and len(calls) <= 4
    alone = [
        beam_search(model, src([9, A]), beam_size=3, max_len=1)[0],
        beam_search(model, src([1]), beam_size=3, max_len=4)[0],
    ]
    assert together == alone


@pytest.mark.parametrize("seed", [0, 1, 4])
@pytest.mark.parametrize("penalty", ["gnmt", "average"])
def test_exhaustive_beam_equals_brute_force(penalty, seed):
    """With a beam wide enough to keep every hypothesis nothing is pruned, so the result is the
    best sequence of all; the table depends on the previous token, so the cache must follow
    the beams through reorder_cache."""
    model = random_model(contexts=1, seed=seed, eos_bias=-1.0)
    max_len = 3
    best, best_score = None, -math.inf
    for n in range(1, max_len + 1):
        for ids in itertools.product(ALLOWED, repeat=n):
            if EOS in ids[:-1] or (n < max_len and ids[-1] != EOS):
                continue  # not a complete hypothesis
            output = [i for i in ids if i != EOS]
            score = final_score(model, A, output, max_len, penalty, 0.6)
            if score > best_score:
                best, best_score = output, score
    wide = len(ALLOWED) ** max_len
    assert beam_search(model, src([A]), beam_size=wide, length_penalty=penalty, max_len=max_len) == [best]


def test_length_penalties_rank_a_short_and_a_long_sentence_as_computed_by_hand():
    # Two complete candidates: short "a" EOS, long "b c d" EOS.
    model = model_from_rows(
        {
            BOS: row(a=0.55, b=0.45),
            A: row(eos=0.9, unk=0.06),
            UNK: row(unk=0.9),  # the runner-up beam after "a" wanders and never ends early
            B_: row(c=0.99),
            C: row(d=0.99),
            D: row(eos=0.99),
        }
    )
    short = math.log(0.55) + math.log(0.9)  # length 2 (with EOS)
    long = math.log(0.45) + 3 * math.log(0.99)  # length 4
    assert short > long  # the plain sum prefers the short one
    assert long / 4 > short / 2  # the per-token average prefers the long one
    lp = lambda n, alpha: ((5 + n) / 6) ** alpha  # noqa: E731  Wu et al. (2016)
    assert short / lp(2, 0.6) > long / lp(4, 0.6)  # GNMT with alpha=0.6 still prefers the short one
    assert long / lp(4, 3.0) > short / lp(2, 3.0)  # a large alpha prefers the long one
    source = src([A])
    run = lambda **kw: beam_search(model, source, beam_size=2, max_len=8, **kw)  # noqa: E731
    assert run(length_penalty="gnmt", alpha=0.0) == [[A]]
    assert run(length_penalty="gnmt", alpha=0.6) == [[A]]
    assert run(length_penalty="gnmt", alpha=3.0) == [[B_, C, D]]
    assert run(length_penalty="average") == [[B_, C, D]]


@pytest.mark.parametrize("penalty, alpha", [("gnmt", 0.6), ("gnmt", 0.0), ("average", 0.0)])
def test_beam_does_not_stop_while_the_greedy_sequence_at_the_top_can_still_win(penalty, alpha):
    """Two hypotheses end before the greedy sequence "a c" does, while it leads the beam:
    step 1: "a" 0.6, "" (EOS) 0.3 -> "" ends with log 0.3 = -1.20 (length 1, every lp(1) is 1);
    step 2: "a c" 0.42, "a" (EOS) 0.15 -> "a" ends with log 0.15 = -1.90 over lp(2): k = 2 have ended;
    step 3: "a c" (EOS) 0.378 ends with log 0.378 = -0.97 over lp(3) >= lp(2): the best.
    Stopping once k hypotheses had ended returned "" (gnmt) or "a" (average) here."""
    model = model_from_rows({BOS: row(a=0.6, eos=0.3), A: row(c=0.7, eos=0.25)})  # every other token: EOS 0.9
    source = src([A])
    best = lambda ids: final_score(model, A, ids, 5, penalty, alpha)  # noqa: E731
    assert greedy(model, source, max_len=5) == [[A, C]]
    assert best([A, C]) > max(best([]), best([A]))
    assert beam_search(model, source, beam_size=2, length_penalty=penalty, alpha=alpha, max_len=5) == [[A, C]]


@pytest.mark.parametrize("penalty, alpha", [("gnmt", 0.6), ("gnmt", 0.0), ("average", 0.0)])
def test_beam_stops_once_no_live_hypothesis_can_win(penalty, alpha):
    """After step 2 only "a" has ended (0.81); the best live hypothesis has 0.0203, and even kept at
    that probability up to the limit of 10 it stays below "a" under every penalty. So the search
    stops with one of k = 2 hypotheses ended."""
    others = {cur: row(d=0.9, eos=0.001) for cur in (UNK, B_, C, D)}
    model = model_from_rows({BOS: row(a=0.9, eos=0.01), A: row(eos=0.9), **others})
    assert beam_search(model, src([A]), beam_size=2, length_penalty=penalty, alpha=alpha, max_len=10) == [[A]]
    assert model.decoder.calls == [2, 2]


@pytest.mark.parametrize("penalty, alpha", [("gnmt", 0.6), ("gnmt", 0.0), ("average", 0.0)])
@pytest.mark.parametrize("beam_size", [2, 5])
def test_beam_scores_at_least_as_high_as_greedy_on_random_models(penalty, alpha, beam_size):
    """40 sources over 8 random tables, with limits from 3 to 9. Not a theorem, since beam search may
    prune greedy's sequence; but here stopping once k hypotheses had ended lost to greedy on
    7 / 9 inputs (beam 2 / 5) with gnmt 0.6, 1 / 6 with gnmt 0 and 7 / 13 with average."""
    model = random_model(contexts=8, seed=11, eos_bias=1.0)
    g = torch.Generator().manual_seed(0)
    sentences = [[i] + torch.randint(4, 8, (i % 4,), generator=g).tolist() for i in range(40)]
    source = src(*sentences)
    max_len = torch.randint(3, 10, (40,), generator=g)
    greedy_out = greedy(model, source, max_len=max_len)
    beam_out = beam_search(model, source, beam_size=beam_size, length_penalty=penalty, alpha=alpha, max_len=max_len)
    for sentence, beam_hyp, greedy_hyp, limit in zip(sentences, beam_out, greedy_out, max_len.tolist()):
        beam_score, greedy_score = (
            final_score(model, sentence[0], ids, limit, penalty, alpha) for ids in (beam_hyp, greedy_hyp)
        )
        assert beam_score >= greedy_score - 1e-6


def test_length_normalised_values():
    assert length_normalised(-2.0, 4, "average") == -0.5
    assert length_normalised(-2.0, 1, "gnmt", 0.6) == pytest.approx(-2.0)  # ((5+1)/6)^a = 1
    assert length_normalised(-2.0, 7, "gnmt", 1.0) == pytest.approx(-1.0)
    with pytest.raises(ConfigError, match="length_penalty='word' must be one of: gnmt, average"):
        length_normalised(-1.0, 2, "word")


# --------------------------------------------------------------------------- batches and limits
@pytest.mark.parametrize("strategy", ["greedy", "beam"])
def test_a_padded_batch_decodes_like_one_sentence_at_a_time(strategy):
    model = random_model(seed=5, eos_bias=0.5)
    sentences = [[9, A, B_], [1], [2, C, C, C, C, C], [4, D]]
    cfg = DecodeConfig(strategy=strategy, beam_size=3)
    batch = src(*sentences)
    together = generate(model, batch, cfg, max_len=max_output_len(batch != PAD, 1.0, 1))
    alone = [generate(model, src(s), cfg, max_len=len(s) + 1)[0] for s in sentences]
    assert together == alone
    for sentence, hyp in zip(sentences, together):
        assert len(hyp) <= len(sentence) + 1


def test_max_output_len_from_mask_or_lengths():
    mask = torch.tensor([[True, True, True, False], [True, False, False, False]])
    assert max_output_len(mask, 1.5, 2).tolist() == [6, 3]
    assert max_output_len(torch.tensor([3, 1]), 1.5, 2).tolist() == [6, 3]
    assert max_output_len(torch.tensor([0]), 0.5, 0).tolist() == [1]  # never below one id
    with pytest.raises(DecodingError, match="bool mask"):
        max_output_len(torch.ones(2, 3), 1.0, 0)


def test_generate_dispatches_and_rejects_unknown_strategies():
    model = model_from_rows({BOS: row(a=0.6, b=0.4), A: row(eos=0.4, c=0.32, d=0.28), B_: row(eos=0.9)})
    source = src([A, C])
    assert generate(model, source, DecodeConfig(strategy="greedy"), max_len=5) == [[A]]
    assert generate(model, source, {"strategy": "beam", "beam_size": 2}, max_len=5) == [[B_]]
    assert generate(model, source, DecodeConfig(strategy="sample", top_k=1), max_len=5) == [[A]]
    with pytest.raises(ConfigError, match="strategy='viterbi' must be one of: greedy, beam, sample"):
        generate(model, source, {"strategy": "viterbi"}, max_len=5)
    with pytest.raises(ConfigError, match="beam_size=0 must be >= 1"):
        generate(model, source, DecodeConfig(strategy="beam", beam_size=0), max_len=5)
    with pytest.raises(DecodingError, match="no field"):
        generate(model, source, {"strategy": "beam", "beams": 2}, max_len=5)


def test_bad_max_len_is_rejected():
    model = random_model()
    with pytest.raises(DecodingError, match="max_len"):
        greedy(model, src([A]), max_len=0)
    with pytest.raises(DecodingError, match="entries"):
        greedy(model, src([A], [B_]), max_len=torch.tensor([3, 3, 3]))


# --------------------------------------------------------------------------- sampling
def test_sampling_with_top_k_one_is_greedy():
    model = random_model(seed=6, eos_bias=1.0)
    source = src([9, A], [1, B_, C], [2])
    expected = greedy(model, source, max_len=6)
    assert sample(model, source, top_k=1, max_len=6) == expected
    assert sample(model, source, top_p=1e-6, temperature=2.0, max_len=6) == expected  # nucleus of one token


def test_seeded_sampling_is_reproducible():
    model = random_model(seed=7)
    source = src([9, A], [1, B_, C], [2], [9])
    draw = lambda seed: sample(  # noqa: E731
        model, source, temperature=1.5, max_len=6, generator=torch.Generator().manual_seed(seed)
    )
    assert draw(1) == draw(1)
    assert any(draw(1) != draw(s) for s in (2, 3, 4))
    for hyp in draw(1):
        assert all(t in ALLOWED and t != EOS for t in hyp)


def test_filter_logits_top_k_then_top_p():
    logits = torch.tensor([[0.5, 0.3, 0.15, 0.05]]).log()
    kept = lambda out: torch.isfinite(out[0]).nonzero().flatten().tolist()  # noqa: E731
    assert kept(filter_logits(logits, top_k=2)) == [0, 1]
    assert kept(filter_logits(logits, top_p=0.75)) == [0, 1]
    assert kept(filter_logits(logits, top_p=0.85)) == [0, 1, 2]
    assert kept(filter_logits(logits, top_p=0.4)) == [0]
    assert kept(filter_logits(logits, top_k=3, top_p=0.99)) == [0, 1, 2]
    shuffled = logits[:, [2, 0, 3, 1]]
    assert kept(filter_logits(shuffled, top_p=0.75)) == [1, 3]


def test_bad_sampling_options_are_rejected():
    model = random_model()
    for options in ({"temperature": 0.0}, {"top_k": -1}, {"top_p": 0.0}, {"top_p": 1.5}):
        with pytest.raises(DecodingError):
            sample(model, src([A]), max_len=3, **options)


# --------------------------------------------------------------------------- real models
def _real_model(decoder: str):
    """A tiny untrained Seq2Seq with the given decoder (GRU encoder; Transformer encoder for a Transformer)."""
    from zoo import registry
    from zoo.model import Seq2Seq
    from zoo.registry import discovery

    discovery.discover()
    if decoder not in registry.names("decoder"):
        pytest.skip(f"decoder '{decoder}' is not registered yet")
    transformer = decoder == "transformer" and "transformer" in registry.names("encoder")
    names = {
        "frontend": "tokens",
        "posenc": "sinusoidal" if transformer else "none",
        "encoder": "transformer" if transformer else "gru",
        "decoder": decoder,
        "attention": "general",
    }
    small = {
        "dim": 16,
        "hidden_size": 16,
        "embed_dim": 16,
        "d_model": 16,
        "heads": 2,
        "layers": 2,
        "ff_dim": 32,
        "dropout": 0.0,
    }
    cfg = {}
    for kind, name in names.items():
        defaults = registry.default_config(kind, name)
        cfg[kind] = {**defaults, **{k: v for k, v in small.items() if k in defaults}}
    torch.manual_seed(0)
    return Seq2Seq(cfg, SourceDescription("tokens", vocab_size=11), 13).eval()


@pytest.mark.parametrize("decoder", ["rnn", "transformer"])
def test_real_model_beam_and_greedy(decoder):
    model = _real_model(decoder)
    source = src([4, 5, 6, 7], [8, 9], [10, 4, 5])
    max_len = torch.tensor([5, 3, 4])
    expected = greedy(model, source, max_len=max_len)
    assert [len(h) <= m for h, m in zip(expected, max_len.tolist())] == [True] * 3
    assert beam_search(model, source, beam_size=1, alpha=0.0, max_len=max_len) == expected
    beams = beam_search(model, source, beam_size=3, max_len=max_len)
    assert len(beams) == 3
    for hyp, m in zip(beams, max_len.tolist()):
        assert len(hyp) <= m and all(4 <= t < 13 or t == UNK for t in hyp)
    assert (
        generate(model, source, DecodeConfig(strategy="beam", beam_size=2), max_len=max_len)[1]
        == beam_search(model, source[1:2, :2], beam_size=2, max_len=3)[0]
    )
