"""The next step ``./run train`` offers after its run: every family compared, in full or in a short variant first,
each with its number of runs and its time here (:mod:`zoo.cli.sweep_cost`), so nobody starts hours of training
unawares. ``python -m zoo.cli.next_steps`` prints it."""

from __future__ import annotations

#: Every family at its own recipe, three seeds each, two at a time on the machine's cores.
FULL = ["-m", "experiment=compare_families", "hydra/launcher=parallel"]
#: The same families with one seed and half the epochs: a first look, in a fraction of the time (no significance
#: test: one seed per family).
SHORT = [*FULL, "seed=1", "trainer.max_epochs=3"]


def next_steps() -> str:
    """The lines ``./run train`` ends with."""
    import zoo.config.schema  # noqa: F401  (stores the schema the configs compose with)
    from zoo.cli.sweep_cost import sweep_cost
    from zoo.registry.index import store_configs

    store_configs()  # the components' configs from the registry's index: no plugin (and no torch) imported
    full, short = sweep_cost(FULL), sweep_cost(SHORT)
    return "\n".join(
        [
            "next: compare every family at its own recipe, three seeds each, then open the report:",
            f"  ./run zoo train {' '.join(FULL)}",
            f"  ({full.says()})",
            "or first a short variant, one seed each and 3 epochs (no significance test with one seed):",
            f"  ./run zoo train {' '.join(SHORT)}",
            f"  ({short.says()})",
            "then: ./run zoo compare multirun/<date>/<time> --baseline model=gru --html report.html",
        ]
    )


if __name__ == "__main__":
    print(next_steps())
