"""Does this machine have what ``trainer`` asks for (and a multi-node job, a launcher on each node)? Checked before
any data loads.

Lightning finds out only when it builds its Trainer, after the tokenizer has trained, and says
so in a page of traceback. ``trainer=gpu`` on a machine without CUDA, or more GPUs than it has,
is one line instead, naming the preset that runs here.
"""

from __future__ import annotations

import os
from typing import Any

from zoo.config.checks import ConfigError
from zoo.config.suggest import close_matches

#: Lightning's accelerators: ``auto`` takes a GPU where there is one, else the CPU.
ACCELERATORS = ("auto", "cpu", "gpu", "cuda", "mps", "tpu", "hpu")
#: The accelerators that mean an NVIDIA GPU through CUDA.
CUDA = ("gpu", "cuda")
#: The switch for Mamba's scan in C on the CPU (zoo.nn.recurrence).
SWITCH = "ZOO_CPU_KERNELS"


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
    if trainer.num_nodes > 1:
        check_nodes(trainer.num_nodes)
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


#: Variables that say how a multi-node job was started on each machine: Lightning's general-purpose environment
#: (set by hand on each node, or by Lightning itself for the processes it starts).
BY_HAND = ("MASTER_ADDR", "NODE_RANK")


def launched_per_node() -> bool:
    """Whether something started this process on each node of a multi-node job, as Lightning's cluster environments
    find it: torchrun, SLURM's srun, LSF's jsrun, MPI, or MASTER_ADDR/NODE_RANK set by hand."""
    from lightning.fabric.plugins.environments import LSFEnvironment, MPIEnvironment, TorchElasticEnvironment

    # SLURM as Lightning tells it (SLURMEnvironment.detect would also warn where srun exists but was not used)
    srun = "SLURM_NTASKS" in os.environ and os.environ.get("SLURM_JOB_NAME") not in ("bash", "interactive")
    by_hand = any(name in os.environ for name in BY_HAND)
    return TorchElasticEnvironment.detect() or srun or LSFEnvironment.detect() or by_hand or MPIEnvironment.detect()


def check_nodes(num_nodes: int) -> None:
    """A multi-node job started on one machine alone waits for the other nodes' processes for ever: refuse it."""
    if not launched_per_node():
        raise ConfigError(
            f"trainer.num_nodes={num_nodes} needs the job started on each of {num_nodes} machines, and nothing "
            f"launched it there (no SLURM, torchrun or MASTER_ADDR/NODE_RANK): submit it with hydra/launcher=slurm "
            f"hydra.launcher.nodes={num_nodes}, or train on this machine with trainer.num_nodes=1"
        )


def kernels_switched_on() -> bool:
    """Whether ``$ZOO_CPU_KERNELS`` lets the C loops run: ``on`` (the default) or ``off``; any other value is a
    :class:`ConfigError`, which ``zoo train`` raises before anything runs."""
    value = os.environ.get(SWITCH, "on")
    if value.strip().lower() not in ("on", "off"):
        raise ConfigError(
            f"{SWITCH}={value}: write {SWITCH}=on (the default: Mamba's scan runs in C where this machine compiles "
            f"it) or {SWITCH}=off (in PyTorch)"
        )
    return value.strip().lower() == "on"
