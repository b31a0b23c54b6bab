"""The probe a run makes of its model before any data loads: the model as configured, built with a stand-in
source and vocabulary, runs one forward pass and one decoding step on a tiny batch while every component's
output is held to its kind's contract.

A plugin that breaks a shape contract would otherwise often train: a scorer's (B, H, T, 1) broadcasts over
the keys and a run ends ``finished`` with a BLEU near zero. Here it stops the run in one line that names
the plugin and the shape expected, with the command that runs its full checks.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from zoo.checks.case import ContractViolation
from zoo.checks.inputs import example_source
from zoo.checks.shapes import output_problem
from zoo.contracts import BOS, Attention, Decoder, Encoder, Frontend, PosEnc
from zoo.errors import ZooError
from zoo.model import Seq2Seq
from zoo.registry import get

BATCH, TARGET_LENGTH, VOCAB = 2, 3, 8


class ContractError(ZooError, ValueError):
    """A component of the configured model broke its kind's contract on the probe batch."""


def probe_model(cfg: Any) -> None:
    """Build the configured model on stand-ins and run it once; raise :class:`ContractError` naming the
    component whose output broke its contract, or that failed on the tiny batch."""
    with torch.random.fork_rng(devices=[]):  # the run's random state stays as if the probe never ran
        run_probe(cfg)


def run_probe(cfg: Any) -> None:
    description, source, _ = example_source(get("frontend", cfg["frontend"]["name"]).cls, BATCH)
    vocab = description.vocab_size or VOCAB  # one vocabulary for a token source, as a joint one may need to be
    model = Seq2Seq(cfg, description, vocab).eval()
    target = torch.randint(4, vocab, (BATCH, TARGET_LENGTH))
    target[:, 0] = BOS
    watch = ContractWatch(model)
    with torch.no_grad(), watch:
        try:
            logits = model(source, target).logits
            held(watch, logits.shape == (BATCH, TARGET_LENGTH, vocab), model.decoder, "logits", logits, "(B, T, V)")
            encoded = model.encode(source)
            step, _, _ = model.decoder.step(target[:, 0], encoded, model.decoder.init_cache(encoded), 0)
            held(watch, step.shape == (BATCH, vocab), model.decoder, "step logits", step, "(B, V)")
        except ContractViolation as broken:
            raise ContractError(str(broken)) from None
        except Exception as error:
            raise ContractError(watch.failure(error)) from None


def held(watch: ContractWatch, condition: bool, module: nn.Module, what: str, got: torch.Tensor, shape: str) -> None:
    if not condition:
        raise ContractViolation(watch.broken(module, f"{what} {tuple(got.shape)}, expected {shape}"))


def label(module: nn.Module) -> str:
    """``attention 'cosine'``: how an error names the plugin a module is."""
    entry = getattr(module, "registry_entry", None)
    return f"{entry.kind} '{entry.name}'" if entry else type(module).__qualname__


class ContractWatch:
    """Forward hooks on every component of a model that check its outputs against its inputs, and a stack of
    the components running, so an error raised inside one names it."""

    CHECKED = (Attention, Frontend, Encoder, Decoder, PosEnc)

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.running: list[nn.Module] = []
        self.handles: list[Any] = []

    def __enter__(self) -> ContractWatch:
        for module in self.model.modules():
            if isinstance(module, self.CHECKED):
                self.handles.append(module.register_forward_pre_hook(self.enter))
                self.handles.append(module.register_forward_hook(self.leave))
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self.handles:
            handle.remove()

    def enter(self, module: nn.Module, inputs: tuple) -> None:
        self.running.append(module)

    def leave(self, module: nn.Module, inputs: tuple, output: Any) -> None:
        self.running.pop()
        problem = output_problem(module, inputs, output)
        if problem:
            raise ContractViolation(self.broken(module, problem))

    def broken(self, module: nn.Module, problem: str) -> str:
        name = getattr(getattr(module, "registry_entry", None), "name", "")
        check = f"; `zoo check {name}` runs its contract checks" if name else ""
        return f"{label(module)} broke its contract on a probe batch before any data loaded: {problem}{check}"

    def failure(self, error: Exception) -> str:
        """The line for an error raised while the model ran: the innermost component running, and the error."""
        where = next((m for m in reversed(self.running) if getattr(m, "registry_entry", None)), None)
        culprit = label(where) if where is not None else "the model"
        return f"{culprit} failed on a probe batch before any data loaded: {type(error).__name__}: {error}"
