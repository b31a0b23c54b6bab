"""Learning-rate schedules: linear warmup, then a decay."""

from __future__ import annotations

import math

from zoo.config.sections import Schedule


def warmup_then_decay(schedule: Schedule | str, warmup_steps: int, total_steps: int):
    """lr multiplier per optimiser step: linear warmup, then inverse-sqrt (Vaswani et al. 2017),
    cosine to zero (Loshchilov & Hutter 2017) or constant."""
    schedule = Schedule.parse(schedule, "optim.schedule")
    warmup = max(1, warmup_steps)

    def factor(step: int) -> float:
        step += 1
        if step < warmup:
            return step / warmup
        if schedule is Schedule.inverse_sqrt:
            return math.sqrt(warmup / step)
        if schedule is Schedule.cosine:
            progress = min(1.0, (step - warmup) / max(1, total_steps - warmup))
            return 0.5 * (1 + math.cos(math.pi * progress))
        return 1.0

    return factor
