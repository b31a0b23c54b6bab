"""Does this machine have what ``trainer`` asks for? Checked before any data loads.

Lightning finds out only when it builds its Trainer, after the tokenizer has trained, and says
so in a page of traceback. ``trainer=gpu`` on a machine without CUDA, or more GPUs than it has,
is one line instead, naming the preset that runs here.
"""

from __future__ import annotations

from typing import Any

from zoo.config.checks import ConfigError
from zoo.config.suggest import close_matches

#: Lightning's accelerators: ``auto`` takes a GPU where there is one, else the CPU.
ACCELERATORS = ("auto", "cpu", "gpu", "cuda", "mps", "tpu", "hpu")
#: The accelerators that mean an NVIDIA GPU through CUDA.
CUDA = ("gpu", "cuda")


def check_machine(trainer: Any) -> None:
    """Refuse ``trainer.accelerator`` and ``trainer.devices`` this machine cannot give."""
    accelerator = str(trainer.accelerator)
    if accelerator not in ACCELERATORS:
        close = close_matches(accelerator, ACCELERATORS)
        hint = f"did you mean {close[0]}? " if close else ""
        raise ConfigError(
            f"trainer.accelerator={accelerator} is not one of Lightning's accelerators; {hint}"
            f"use one of {', '.join(ACCELERATORS)} (or a preset: trainer=cpu, trainer=gpu)"
        )
    if accelerator in CUDA:
        check_gpus(trainer.devices)
    if accelerator == "mps":
        import torch

        if not torch.backends.mps.is_available():
            raise ConfigError(
                "trainer.accelerator=mps needs Apple's Metal GPU, which this machine lacks; "
                "train on the CPU with trainer=cpu"
            )


def check_gpus(devices: Any) -> None:
    """``devices`` (a count, -1 or ``auto`` for all, or a list of GPU indices) must exist on this machine."""
    import torch
    from omegaconf import OmegaConf

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        raise ConfigError(
            "trainer.accelerator=gpu needs a CUDA GPU, and this machine has none (torch.cuda.is_available() "
            "is false); train on the CPU with trainer=cpu (trainer=ddp_cpu for several processes)"
        )
    if OmegaConf.is_list(devices) or isinstance(devices, (list, tuple)):
        highest = max(int(index) for index in devices)
        if highest >= count:
            raise ConfigError(
                f"trainer.devices={list(devices)} names GPU {highest}, and this machine has {count} "
                f"(0 to {count - 1}); name those, or give trainer.devices=-1 for all of them"
            )
    elif isinstance(devices, int) and devices > count:
        raise ConfigError(
            f"trainer.devices={devices} asks for {devices} GPUs, and this machine has {count}; "
            "give at most that many (-1: all of them)"
        )
