"""Generation for every decoder: greedy search, beam search and sampling.

All three only use the decoder contract (:class:`zoo.contracts.Decoder`):
``init_cache(enc)``, then one ``step(y_t (B,), enc, cache, t) -> (logits (B, V), cache, attn)``
per output position starting with ``y_0 = BOS`` at ``t = 0``, and, for beam search,
``reorder_cache(cache, index)``. So any decoder plugin gets every strategy for free.

Conventions shared by every function here:

* Results are token ids without BOS, EOS or PAD, one list per source sentence.
* ``max_len`` is the most ids a sentence may produce, EOS included; a sentence that
  has not produced EOS by then is cut there. It is an int (the same for every
  sentence) or a (B,) tensor (one limit per sentence, see :func:`max_output_len`).
* PAD and BOS are never generated: their logits are set to -inf before choosing; nor are EOS and UNK as the first
  token of a decoder that writes one (``Decoder.writes_one_token``: a label).
* Everything runs under ``torch.no_grad()``. Putting the model in ``eval()`` mode
  (no dropout) is the caller's job, as it is for any PyTorch inference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any

import torch
import torch.nn.functional as F

from zoo.config.sections import DecodeConfig, LengthPenalty, Strategy
from zoo.contracts import BOS, EOS, PAD, UNK, EncoderOutput
from zoo.errors import ZooError


class DecodingError(ZooError, ValueError):
    """Decoding options that cannot work (a negative beam size, a bad length limit, ...)."""


# --------------------------------------------------------------------------- helpers
def max_output_len(source_mask_or_lengths: torch.Tensor, ratio: float, offset: int) -> torch.Tensor:
    """Per-sentence output limit ``floor(ratio * source_length) + offset`` (at least 1).

    Args:
        source_mask_or_lengths: a (B, S) bool mask, True at real source positions,
            or the (B,) source lengths.
    Returns:
        (B,) long tensor on the input's device.
    """
    x = source_mask_or_lengths
    if x.dim() == 2 and x.dtype == torch.bool:
        lengths = x.sum(dim=1)
    elif x.dim() == 1 and not x.is_floating_point():
        lengths = x
    else:
        raise DecodingError(
            f"max_output_len needs a (B, S) bool mask or (B,) integer lengths, got a {tuple(x.shape)} {x.dtype} tensor"
        )
    limits = torch.floor(lengths.double() * ratio).long() + int(offset)
    return limits.clamp(min=1)


def length_normalised(
    score: float | torch.Tensor, length: float | torch.Tensor, penalty: LengthPenalty | str, alpha: float = 0.6
) -> float | torch.Tensor:
    """A hypothesis' summed log-probability ``score`` divided by its length penalty
    (floats, or tensors elementwise).

    * ``gnmt``: ``score / ((5 + length) / 6) ** alpha`` (Wu et al., 2016, eq. 14);
      ``alpha = 0`` ranks by the raw sum, larger ``alpha`` favours longer outputs.
    * ``average``: ``score / length``, the mean log-probability per token.

    ``length`` counts the generated ids, EOS included. Both penalties grow with
    ``length`` (for ``alpha >= 0``), which bounds what a hypothesis can still
    reach (:func:`_best_reachable`).
    """
    if LengthPenalty.parse(penalty, "length_penalty") is LengthPenalty.gnmt:
        return score / ((5.0 + length) / 6.0) ** alpha
    return score / length


def filter_logits(logits: torch.Tensor, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    """Top-k, then nucleus (top-p) filtering of (B, V) logits; removed entries become -inf.

    Top-k keeps the ``top_k`` largest logits per row (``0`` keeps all; ties with the
    k-th are kept too). Nucleus filtering (Holtzman et al., 2020) then keeps the
    smallest set of most probable tokens whose probabilities sum to at least
    ``top_p``; the most probable token always survives.
    """
    if top_k > 0:
        kth = logits.topk(min(top_k, logits.size(-1)), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = logits.sort(dim=-1, descending=True)
        probs = sorted_logits.softmax(dim=-1)
        mass_before = probs.cumsum(dim=-1) - probs  # probability of the tokens ranked above
        sorted_logits = sorted_logits.masked_fill(mass_before >= top_p, float("-inf"))
        logits = torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)
    return logits


def _limits(max_len: int | torch.Tensor, batch: int, device: torch.device) -> torch.Tensor:
    """``max_len`` as a (B,) long tensor, checked."""
    if isinstance(max_len, torch.Tensor):
        limits = max_len.to(device=device, dtype=torch.long).reshape(-1)
        if limits.numel() == 1:
            limits = limits.expand(batch)
        if limits.numel() != batch:
            raise DecodingError(f"max_len has {limits.numel()} entries but the batch has {batch} sentences")
    else:
        limits = torch.full((batch,), int(max_len), dtype=torch.long, device=device)
    if batch and int(limits.min()) < 1:
        raise DecodingError(f"max_len must be >= 1 for every sentence, got {int(limits.min())}")
    return limits


def _next_logits(model: Any, y: torch.Tensor, enc: EncoderOutput, cache: dict, t: int) -> tuple[torch.Tensor, dict]:
    """One decoder step; PAD and BOS are made impossible, and so are EOS and UNK as the first token of a decoder that
    writes one (a label: an under-trained head may score them highest). Returns float32 (B, V) logits and the
    cache."""
    logits, cache, _ = model.decoder.step(y, enc, cache, t)
    logits = logits.float().clone()
    logits[:, PAD] = float("-inf")
    logits[:, BOS] = float("-inf")
    if t == 0 and getattr(model.decoder, "writes_one_token", False):
        logits[:, EOS] = float("-inf")
        logits[:, UNK] = float("-inf")
    return logits, cache


def _to_lists(tokens: torch.Tensor, limits: torch.Tensor) -> list[list[int]]:
    """(B, T) generated ids -> per-row lists cut at the first EOS and at the row's limit."""
    out = []
    for row, limit in zip(tokens.tolist(), limits.tolist()):
        row = row[:limit]
        out.append(row[: row.index(EOS)] if EOS in row else row)
    return out


# --------------------------------------------------------------------------- greedy and sampling
def _one_token_per_step(
    model: Any, enc: EncoderOutput, limits: torch.Tensor, choose: Callable[[torch.Tensor], torch.Tensor]
) -> list[list[int]]:
    """Greedy and sampling: each sentence extends its single hypothesis by ``choose(logits)``."""
    batch = enc.memory.size(0)
    if batch == 0:
        return []
    device = enc.memory.device
    cache = model.decoder.init_cache(enc)
    y = torch.full((batch,), BOS, dtype=torch.long, device=device)
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    produced = []
    for t in range(int(limits.max())):
        logits, cache = _next_logits(model, y, enc, cache, t)
        # Finished sentences keep being fed EOS; what they produce is cut off below.
        y = choose(logits).masked_fill(finished, EOS)
        produced.append(y)
        finished = finished | (y == EOS) | (limits <= t + 1)
        if bool(finished.all()):
            break
    return _to_lists(torch.stack(produced, dim=1), limits)


def _greedy(model: Any, enc: EncoderOutput, limits: torch.Tensor) -> list[list[int]]:
    return _one_token_per_step(model, enc, limits, lambda logits: logits.argmax(dim=-1))


@torch.no_grad()
def greedy(model: Any, source: torch.Tensor, *, max_len: int | torch.Tensor) -> list[list[int]]:
    """Pick the most probable token at every step.

    Args:
        model: has ``encode(source) -> EncoderOutput`` and a ``decoder`` (see module docstring).
        source: (B, S) source ids.
        max_len: most ids per sentence, int or (B,) tensor.
    """
    enc = model.encode(source)
    return _greedy(model, enc, _limits(max_len, enc.memory.size(0), enc.memory.device))


def _check_sampling(temperature: float, top_k: int, top_p: float) -> None:
    if temperature <= 0:
        raise DecodingError(f"temperature must be > 0, got {temperature}; for deterministic output use strategy=greedy")
    if top_k < 0:
        raise DecodingError(f"top_k must be >= 0 (0 keeps every token), got {top_k}")
    if not 0.0 < top_p <= 1.0:
        raise DecodingError(f"top_p must be in (0, 1] (1 keeps every token), got {top_p}")


def _sample(
    model: Any,
    enc: EncoderOutput,
    limits: torch.Tensor,
    temperature: float,
    top_k: int,
    top_p: float,
    generator: torch.Generator | None,
) -> list[list[int]]:
    _check_sampling(temperature, top_k, top_p)

    def choose(logits: torch.Tensor) -> torch.Tensor:
        probs = filter_logits(logits / temperature, top_k, top_p).softmax(dim=-1)
        return torch.multinomial(probs, 1, generator=generator).squeeze(1)

    return _one_token_per_step(model, enc, limits, choose)


@torch.no_grad()
def sample(
    model: Any,
    source: torch.Tensor,
    *,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    max_len: int | torch.Tensor,
    generator: torch.Generator | None = None,
    count: int = 1,
) -> list[list[int]]:
    """Draw every token from the model's distribution divided by ``temperature``,
    after top-k and then nucleus (top-p) filtering (:func:`filter_logits`; Holtzman et al., 2020).

    ``top_k=1`` is greedy search. Pass a seeded ``generator`` (on the model's device)
    for reproducible samples. ``count`` draws that many outputs per source, encoded once:
    source ``b``'s are results ``b * count`` to ``b * count + count - 1``.
    """
    if count < 1:
        raise DecodingError(f"count must be >= 1 (outputs per source), got {count}")
    enc = model.encode(source)
    limits = _limits(max_len, enc.memory.size(0), enc.memory.device)
    if count > 1:
        rows = torch.arange(enc.memory.size(0), device=enc.memory.device).repeat_interleave(count)
        enc, limits = enc.index_select(rows), limits.index_select(0, rows)
    return _sample(model, enc, limits, temperature, top_k, top_p, generator)


# --------------------------------------------------------------------------- beam search
def _best_reachable(
    scores: torch.Tensor, limits: torch.Tensor, length_penalty: LengthPenalty, alpha: float
) -> torch.Tensor:
    """The highest final score any live hypothesis of each sentence can still reach, (B,).

    ``scores`` (B, k) are the live hypotheses' summed log-probabilities and
    ``limits`` (B,) the sentences' length limits. Growing a hypothesis only adds
    log-probabilities <= 0, so its final sum is at most its current one, ``s <= 0``,
    and its final length ``L`` is at most the limit. Every penalty ``lp(L)`` here is
    positive and grows with ``L`` (gnmt's ``((5 + L) / 6) ** alpha`` for ``alpha >= 0``,
    average's ``L``), so the final score is at most ``s / lp(limit)``:

    * ``gnmt``: ``s / ((5 + limit) / 6) ** alpha``; with ``alpha = 0`` that is ``s`` itself;
    * ``average``: ``s / limit``.
    """
    best_live = scores.max(dim=1).values
    return length_normalised(best_live, limits.to(best_live.dtype), length_penalty, alpha)


def _keep_best(
    best_score: torch.Tensor,
    best_ids: torch.Tensor,
    final: torch.Tensor,
    rows: torch.Tensor,
    history: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each sentence's best complete hypothesis so far, updated with new ones.

    Args:
        best_score: (B,) final score of each sentence's best hypothesis (-inf: none yet).
        best_ids: (B, max_len) its ids, PAD after them.
        final: (B, k) final scores of the hypotheses completed this step, -inf where none.
        rows: (B, k) their rows of ``history``.
        history: (B*k, T) ids of every row.
    Returns:
        the updated ``best_score`` and ``best_ids``. Only a strictly higher score
        replaces the best, so of equal scores the first completed is kept.
    """
    candidate, j = final.max(dim=1)
    better = candidate > best_score
    ids = history.index_select(0, rows.gather(1, j[:, None]).squeeze(1))  # (B, T)
    padded = F.pad(ids, (0, best_ids.size(1) - ids.size(1)), value=PAD)
    return torch.where(better, candidate, best_score), torch.where(better[:, None], padded, best_ids)


def _beam_search(
    model: Any,
    enc: EncoderOutput,
    limits: torch.Tensor,
    beam_size: int,
    length_penalty: LengthPenalty | str,
    alpha: float,
) -> list[list[int]]:
    if beam_size < 1:
        raise DecodingError(f"beam_size must be >= 1, got {beam_size}")
    length_penalty = LengthPenalty.parse(length_penalty, "length_penalty")
    batch, k, device = enc.memory.size(0), beam_size, enc.memory.device
    if batch == 0:
        return []
    # Every sentence becomes k rows: sentence b owns rows b*k .. b*k + k-1. A sentence that
    # is done leaves the batch, so the tensors below hold the live sentences only
    # and ``sentence`` says which input each one is.
    enc = enc.index_select(torch.arange(batch, device=device).repeat_interleave(k))
    cache = model.decoder.init_cache(enc)
    sentence = torch.arange(batch, device=device)
    own_rows = torch.arange(k, device=device)  # (k,): a sentence's rows, counted from its first
    # Summed log-probabilities of the live hypotheses. All k start as the same empty
    # hypothesis, so only beam 0 may be expanded at the first step.
    scores = torch.full((batch, k), float("-inf"), device=device)
    scores[:, 0] = 0.0
    history = torch.empty((batch * k, 0), dtype=torch.long, device=device)  # ids so far, per row
    y = torch.full((batch * k,), BOS, dtype=torch.long, device=device)
    max_limit = int(limits.max())
    best_score = torch.full((batch,), float("-inf"), device=device)
    best_ids = torch.full((batch, max_limit), PAD, dtype=torch.long, device=device)
    outputs = best_ids.clone()  # (B, max_limit): each input's result, written when its sentence is done

    for t in range(max_limit):
        length = t + 1  # ids in a hypothesis after this step
        live = scores.size(0)
        first_row = (torch.arange(live, device=device) * k)[:, None]  # (live, 1)
        logits, cache = _next_logits(model, y, enc, cache, t)
        log_probs = F.log_softmax(logits, dim=-1)  # (live*k, V)
        vocab = log_probs.size(-1)
        totals = (scores.reshape(-1, 1) + log_probs).reshape(live, k * vocab)
        # 2k candidates, best first: at most k of them end in EOS, so k always continue.
        top, flat = totals.topk(min(2 * k, k * vocab), dim=1)
        parent, token = flat // vocab, flat % vocab

        # An EOS candidate among the k best completes its parent's hypothesis.
        ends = (token[:, :k] == EOS) & torch.isfinite(top[:, :k])
        final = length_normalised(top[:, :k], length, length_penalty, alpha).masked_fill(~ends, float("-inf"))
        best_score, best_ids = _keep_best(best_score, best_ids, final, first_row + parent[:, :k], history)

        # The k best candidates not ending in EOS live on (a stable sort keeps them in score order).
        keep = torch.sort((token == EOS).to(torch.uint8), dim=1, stable=True).indices[:, :k]
        scores = top.gather(1, keep)
        rows = (first_row + parent.gather(1, keep)).reshape(-1)
        y = token.gather(1, keep).reshape(-1)
        history = torch.cat([history.index_select(0, rows), y[:, None]], dim=1)

        # At its length limit a sentence's live hypotheses are complete as they are.
        at_limit = limits <= length
        final = length_normalised(scores, length, length_penalty, alpha).masked_fill(~at_limit[:, None], float("-inf"))
        best_score, best_ids = _keep_best(best_score, best_ids, final, first_row + own_rows, history)

        # A sentence is done at its limit, or once no live hypothesis can beat its best.
        done = at_limit | (_best_reachable(scores, limits, length_penalty, alpha) <= best_score)
        finished = int(done.sum())
        if finished:
            outputs[sentence[done]] = best_ids[done]
            if finished == live:
                break
            # The done sentences leave the batch: later steps compute only live hypotheses.
            still = (~done).nonzero().squeeze(1)
            own = (still[:, None] * k + own_rows).reshape(-1)  # the rows of the sentences still searching
            sentence, scores, limits, best_score, best_ids = (
                x.index_select(0, still) for x in (sentence, scores, limits, best_score, best_ids)
            )
            history, y, rows = (x.index_select(0, own) for x in (history, y, rows))
            enc = enc.index_select(own)
        # The cache follows the survivors, of live sentences only: one reorder per step.
        cache = model.decoder.reorder_cache(cache, rows)

    return [ids[ids != PAD].tolist() for ids in outputs]


@torch.no_grad()
def beam_search(
    model: Any,
    source: torch.Tensor,
    *,
    beam_size: int,
    length_penalty: LengthPenalty | str = LengthPenalty.gnmt,
    alpha: float = 0.6,
    max_len: int | torch.Tensor,
) -> list[list[int]]:
    """Keep the ``beam_size`` best partial hypotheses per sentence (scored by summed
    log-probabilities) and return each sentence's best complete one.

    All sentences and beams advance together: one ``decoder.step`` call per time
    step on B x k rows, whose cache follows the surviving hypotheses through
    ``decoder.reorder_cache``. A sentence that is done leaves the batch (its rows are
    dropped from the cache and the encoder output), so the batch shrinks to the
    sentences still searching and no step computes a finished one. Complete hypotheses (ended by EOS, or cut at
    ``max_len``) are ranked by their final score, :func:`length_normalised` with
    ``length_penalty`` (``gnmt`` with ``alpha``, Wu et al. 2016; or ``average``).

    A sentence stops when no live hypothesis can still beat its best complete one,
    or at ``max_len``; decoding stops when every sentence has stopped. The bound on
    a live hypothesis with summed log-probability ``s`` is ``s / lp(max_len)``
    (``gnmt``: ``s / ((5 + max_len) / 6) ** alpha``, which is ``s`` for ``alpha = 0``;
    ``average``: ``s / max_len``; see :func:`_best_reachable`). So stopping early
    never changes the result (running every sentence to ``max_len`` returns the
    same), and the search never stops while greedy search's sequence is alive at the
    top of the beam and would score higher. Stopping instead once ``beam_size``
    hypotheses have ended (fairseq's rule, Ott et al. 2019) can return a sequence
    scoring below greedy search's. The bound is loose for ``average`` (and large
    ``alpha``), so those run closer to ``max_len``.

    ``beam_size=1`` follows greedy search's sequence until it ends, so it scores at
    least as high; with ``gnmt`` and ``alpha=0`` it returns greedy's output.
    """
    enc = model.encode(source)
    limits = _limits(max_len, enc.memory.size(0), enc.memory.device)
    return _beam_search(model, enc, limits, beam_size, length_penalty, alpha)


# --------------------------------------------------------------------------- config dispatch
@torch.no_grad()
def generate(
    model: Any,
    source: torch.Tensor,
    decode_cfg: DecodeConfig | Mapping[str, Any] | None = None,
    *,
    max_len: int | torch.Tensor,
    generator: torch.Generator | None = None,
) -> list[list[int]]:
    """Decode a source batch with the strategy and options of a :class:`~zoo.config.sections.DecodeConfig`
    (or a mapping with its fields; ``None`` means the defaults).

    ``max_len`` bounds each output (see the module notes); the task says what it is
    (:meth:`zoo.contracts.Task.output_limit`), since only it knows how long an output may be.
    """
    cfg = _as_decode_config(decode_cfg)
    enc = model.encode(source)
    limits = _limits(max_len, enc.memory.size(0), enc.memory.device)
    if cfg.strategy == Strategy.greedy:
        return _greedy(model, enc, limits)
    if cfg.strategy == Strategy.beam:
        return _beam_search(model, enc, limits, cfg.beam_size, cfg.length_penalty, cfg.alpha)
    return _sample(model, enc, limits, cfg.temperature, cfg.top_k, cfg.top_p, generator)


def _as_decode_config(decode_cfg: DecodeConfig | Mapping[str, Any] | None) -> DecodeConfig:
    from zoo.config.sections import DecodeConfig

    if decode_cfg is None:
        return DecodeConfig()
    if isinstance(decode_cfg, DecodeConfig):
        return decode_cfg
    values = dict(decode_cfg)
    allowed = {f.name for f in fields(DecodeConfig)}
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise DecodingError(f"decode config has no field(s) {', '.join(unknown)}; fields: {', '.join(sorted(allowed))}")
    return DecodeConfig(**values)
