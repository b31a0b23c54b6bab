"""Self-critical sequence training (Rennie et al., 2017, "Self-critical Sequence Training for Image Captioning"):
REINFORCE on a sequence metric, each sample's reward measured against a baseline from the same model.

Token-level cross-entropy trains a model on the references' prefixes and scores it on its own outputs with a
sequence metric; SCST trains on its own outputs and the metric itself. For every distinct item of a training batch
it draws ``scst.samples`` (k) outputs, scores each against the item's references with the reward metric
(:meth:`zoo.contracts.Metric.reward`: CIDEr-D with document frequencies of the training split) and raises the
log-probability of the outputs that beat the baseline, lowering the others':

* ``baseline=greedy``: the reward of the model's greedy output for the same source (Rennie et al., 2017), the
  output validation judges, so a sample only gains by beating what the model would say;
* ``baseline=mean``: the mean reward of the item's other k - 1 samples (Luo, 2020, "A Better Variant of
  Self-Critical Sequence Training"), which needs no greedy decode and is unbiased.

Samples and the greedy output are decoded without gradients in evaluation mode (no dropout: the model validation
decodes), as the task bounds validation outputs (``Task.output_limit``); the samples are drawn from torch's global
generator, which zoo seeds and every ``last.ckpt`` carries, so a resumed run draws what it would have. Their
log-probabilities are then computed with gradients by teacher forcing in training mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from zoo.config.checks import ConfigError
from zoo.config.sections import Baseline
from zoo.config.suggest import did_you_mean, with_hint
from zoo.contracts import BOS, EOS, PAD, Metric, Task
from zoo.contracts.metric import Reward
from zoo.data.collate import pad
from zoo.data.references import TrainingReferences
from zoo.decoding import greedy, sample
from zoo.registry import build, get, names
from zoo.training.evaluation import chosen_metrics, monitored


def step_section(cfg: Any) -> str:
    """The section whose step settings (:data:`zoo.config.sections.STEP_SETTINGS`) a run trains with: ``scst`` with
    scst.enabled (a small constant step: the cross-entropy one destroys the model SCST starts from), else ``optim``."""
    return "scst" if cfg["scst"]["enabled"] else "optim"


# ------------------------------------------------------------------------------------------- the reward


def reward_metric(cfg: Any) -> Metric:
    """The metric whose per-item score is the reward: ``scst.metric``, else the monitored one, with the options
    ``metrics`` gives it; a :class:`ConfigError` (``metric=...``) naming the choices when it is not registered,
    cannot run here or has no per-item scores."""
    named = cfg["scst"]["metric"]
    name = named or monitored(cfg)
    field = f"metric={name}" if named else f"metric=null takes the monitored metric {name}, which"
    usable = [
        m for m in names("metric") if get("metric", m).cls.scores_items() and not get("metric", m).cls.unavailable()
    ]
    choices = f"choose one that scores items one by one: scst.metric={'|'.join(usable)}"
    if name not in names("metric"):
        raise ConfigError(with_hint(f"{field} is not a registered metric", did_you_mean(name, usable), choices))
    metric_cls = get("metric", name).cls
    reason = metric_cls.unavailable()
    if reason:
        raise ConfigError(f"{field} cannot run here ({' '.join(reason.split())}); {choices}")
    if not metric_cls.scores_items():
        raise ConfigError(f"{field} has no per-item scores, so it cannot reward one output at a time; {choices}")
    options = next((m for m in chosen_metrics(cfg) if m.get("name") == name), {"name": name})
    return build("metric", options)


# ---------------------------------------------------------------------------------------- the objective


def distinct_items(index: torch.Tensor) -> tuple[list[int], list[int]]:
    """The first row of each item in a batch (a training batch holds a row per reference) and the items, in order."""
    first: dict[int, int] = {}
    for row, item in enumerate(index.tolist()):
        first.setdefault(item, row)
    return list(first.values()), list(first)


def advantages(rewards: torch.Tensor, baseline: Baseline, greedy_rewards: torch.Tensor | None) -> torch.Tensor:
    """Each sample's reward minus its baseline; ``rewards`` (n items, k samples), ``greedy_rewards`` (n,)."""
    if baseline is Baseline.greedy:
        return rewards - greedy_rewards[:, None]
    count = rewards.size(1)
    return rewards - (rewards.sum(dim=1, keepdim=True) - rewards) / (count - 1)


def sequence_log_probs(
    model: Any, source: torch.Tensor, outputs: list[list[int]], limits: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Teacher-forced, with gradients: the summed log-probability of each generated output (B*k rows for B sources,
    k outputs each, source-major, as :func:`zoo.decoding.sample` gives them) and the number of tokens.

    An output's tokens are what was generated: its ids and the EOS that ended it, none after (an output cut at its
    ``limits`` entry has no EOS). PAD and BOS are excluded from the distribution, as generation excludes them.
    """
    count = len(outputs) // source.size(0)
    ended = [len(ids) < limit for ids, limit in zip(outputs, limits.repeat_interleave(count).tolist())]
    produced = [[*ids, EOS] if end else ids for ids, end in zip(outputs, ended)]
    target_in = pad([[BOS, *ids[:-1]] for ids in produced]).to(source.device)
    target_out = pad(produced).to(source.device)
    rows = torch.arange(source.size(0), device=source.device).repeat_interleave(count)
    logits = model.decoder(target_in, model.encode(source).index_select(rows)).logits.float()
    never = torch.zeros(logits.size(-1), dtype=torch.bool, device=logits.device)
    never[[PAD, BOS]] = True
    log_probs = F.log_softmax(logits.masked_fill(never, float("-inf")), dim=-1)
    real = target_out != PAD
    token_log_probs = log_probs.gather(-1, target_out[..., None]).squeeze(-1).masked_fill(~real, 0.0)
    return token_log_probs.sum(dim=1), real.sum()


def scst_loss(log_probs: torch.Tensor, advantage: torch.Tensor) -> torch.Tensor:
    """``-mean((r - b) * log p(y))`` over the samples, ``log p(y)`` summed over the output's tokens.

    Not divided by the output's length: the sum is the REINFORCE estimate of the expected reward's gradient
    (Williams, 1992); dividing each output by its length would weigh a short output's tokens more than a long
    one's and so follow another objective. The mean over samples keeps the scale independent of the batch.
    """
    return -(advantage.detach() * log_probs).mean()


# ------------------------------------------------------------------------------------------- the step


@dataclass
class ScstStep:
    """One training step: the loss to backpropagate, the samples' mean negative log-probability per token (detached;
    what the divergence check compares with chance level), the mean reward of the samples and of their baselines
    (training curves) and the number of distinct items the batch held."""

    loss: torch.Tensor
    token_loss: torch.Tensor
    reward: torch.Tensor
    baseline: torch.Tensor
    items: int


class Scst:
    """The SCST objective of a run (its ``scst`` section): :meth:`step` turns a training batch into a loss. The
    reward (a metric's, fixed on the training references) is made on the first step, so nothing is scored or read
    before training does."""

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg
        self.samples = int(cfg["scst"]["samples"])
        self.baseline = Baseline(cfg["scst"]["baseline"])
        self._reward: Reward | None = None

    def reward(self, references: TrainingReferences) -> Reward:
        if self._reward is None:
            self._reward = reward_metric(self.cfg).reward(references)
        return self._reward

    def step(self, model: Any, batch: dict, task: Task, references: TrainingReferences) -> ScstStep:
        """The SCST loss of a training batch for ``model`` (in training mode; left so), ``task`` turning its outputs
        into text and ``references`` holding every training item's (module docstring)."""
        rows, items = distinct_items(batch["index"])
        source = batch["source"].index_select(0, torch.tensor(rows, device=batch["source"].device))
        limits = task.output_limit(source)
        training = model.training
        model.eval()
        try:
            outputs = sample(model, source, max_len=limits, count=self.samples)
            greedy_outputs = greedy(model, source, max_len=limits) if self.baseline is Baseline.greedy else []
        finally:
            model.train(training)
        # Queued before the scoring: on a GPU the teacher-forced pass runs while the CPU scores the outputs.
        log_probs, tokens = sequence_log_probs(model, source, outputs, limits)
        item_references = references.of(items)
        scored_references = [refs for refs in item_references for _ in range(self.samples)]
        if greedy_outputs:
            scored_references += item_references
        scores = self.reward(references)(task.decode_targets(outputs + greedy_outputs), scored_references)
        scores = torch.tensor(scores, dtype=torch.float32, device=source.device)
        rewards = scores[: len(outputs)].view(len(items), self.samples)
        greedy_rewards = scores[len(outputs) :] if greedy_outputs else None
        advantage = advantages(rewards, self.baseline, greedy_rewards)
        return ScstStep(
            loss=scst_loss(log_probs, advantage.reshape(-1)),
            token_loss=-log_probs.detach().sum() / tokens,
            reward=rewards.mean(),
            baseline=(rewards - advantage).mean(),
            items=len(items),
        )
