"""zoo's Hydra sweeper ``hydra/sweeper=optuna`` (registered in :mod:`.optuna_sweeper`; the search is :mod:`zoo.search`).

Hydra finds sweepers only in the ``hydra_plugins`` namespace package, and imports every module here in every
Hydra application of the environment: these modules import nothing heavy.
"""
