"""Equal-budget hyperparameter search: ``zoo train -m hydra/sweeper=optuna model=gru,transformer``.

One Optuna study (Akiba et al., 2019) per combination of the sweep's comma lists (a family), each with
the same budget, over the space its ``search`` preset names (:mod:`zoo.search.space`); trials never see
the test split, and the best trial is re-run once per seed with it (:mod:`zoo.search.sweeper`). What a
search found, as the expected best validation score against the number of trials (Dodge et al., 2019),
is read back from the run directories alone (:mod:`zoo.search.expected_max`, :mod:`zoo.search.report`).

Only the sweeper needs Optuna (``pip install 'zoo[search]'``); reading a search back does not.
"""

from zoo.run.layout import STUDY_FILE

__all__ = ["STUDY_FILE"]
