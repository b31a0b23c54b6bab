"""Registers zoo's search as Hydra's sweeper ``zoo_optuna`` (``conf/hydra/sweeper/optuna.yaml`` selects it).

The settings are ``hydra.sweeper.*`` (``trials``, ``minutes``, ``flops``, ``reseed``, ...);
:class:`zoo.search.sweeper.Search` does the work.
"""

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.plugins.sweeper import Sweeper


@dataclass
class ZooOptunaSweeperConf:
    _target_: str = "hydra_plugins.zoo_optuna_sweeper.optuna_sweeper.ZooOptunaSweeper"
    trials: int | None = None  # the budget per study in trials (completed + failed); 20 when minutes is null too
    minutes: float | None = None  # or in minutes of its trials' wall time
    flops: float | None = None  # or in training FLOPs its trials recorded (equal compute across families)
    reseed: list[int] = field(default_factory=lambda: [1, 2, 3])  # the best trial again with these seeds ([]: none)
    # random: independent draws, what the expected-best curves assume (Dodge et al., 2019) | tpe (Bergstra et al.,
    # 2011): later trials follow earlier ones, better at finding one best setting, its curves read optimistic
    sampler: str = "random"
    seed: int = 0  # the sampler's seed: the same command draws the same values
    n_jobs: int = 1  # trials a worker launches together (parallel: side by side; slurm: one SLURM job each)
    storage: str | None = None  # a journal file's path or a database URL; null: <sweep dir>/optuna.journal


ConfigStore.instance().store(group="hydra/sweeper", name="zoo_optuna", node=ZooOptunaSweeperConf, provider="zoo")


class ZooOptunaSweeper(Sweeper):
    """Hydra's handle on :class:`zoo.search.sweeper.Search` (imported when a search starts, not when Hydra scans)."""

    def __init__(self, **settings: Any) -> None:
        from zoo.search.sweeper import Search

        self.search = Search(**settings)

    def setup(self, *, hydra_context: Any, task_function: Any, config: Any) -> None:
        self.search.setup(hydra_context=hydra_context, task_function=task_function, config=config)

    def sweep(self, arguments: list[str]) -> None:
        self.search.sweep(arguments)
