"""Learning-rate schedules: linear warmup, then a decay that ends where training ends.

Every schedule is a multiplier of the learning rate per optimiser step ``i`` (0 to ``total_steps`` - 1). The decays
reach zero one step after the last, never at it (a step at learning rate 0 is compute spent for nothing). With
``cool_down`` (a budget: the run ends at a known step), the inverse square root and the constant rate end in a
linear decay over the last :data:`COOL_DOWN` of the steps (Zhai et al., 2022; Hägele et al., 2024: as good as a
cosine at the same length), so that every recipe anneals to its budget.
"""

from __future__ import annotations

import math

from zoo.config.sections import Schedule

#: The part of a budget's steps that the inverse square root and the constant rate decay over at the end.
COOL_DOWN = 0.2


def warmup_then_decay(schedule: Schedule | str, warmup_steps: int, total_steps: int, cool_down: bool = False):
    """lr multiplier per optimiser step: linear warmup, then inverse-sqrt (Vaswani et al. 2017), cosine to zero
    (Loshchilov & Hutter 2017) or constant; with ``cool_down`` the last two end in a linear decay to zero."""
    schedule = Schedule.parse(schedule, "optim.schedule")
    warmup = max(1, warmup_steps)
    cooling = max(1, round(COOL_DOWN * total_steps)) if cool_down and schedule is not Schedule.cosine else 0

    def decay(step: int) -> float:
        if schedule is Schedule.inverse_sqrt:
            return math.sqrt(warmup / step)
        if schedule is Schedule.cosine:
            return 0.5 * (1 + math.cos(math.pi * (step - warmup) / (total_steps - warmup + 1)))
        return 1.0

    def factor(step: int) -> float:
        step += 1
        if step < warmup:
            return step / warmup
        if cooling and step > total_steps - cooling:  # without a cool-down nothing ends at total_steps: a resumed
            # run that is given more steps goes on from the learning rate it stopped at
            return decay(total_steps - cooling) * (total_steps + 1 - step) / (cooling + 1)
        return decay(step)

    return factor
