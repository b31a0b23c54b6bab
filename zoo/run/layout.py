"""What a run directory (and a sweep's) holds, by name: every module that reads or writes those files takes the name
from here."""

from __future__ import annotations

#: The run's record (zoo.run.record): identity, status, validations and, at the end, what it measured.
SUMMARY_FILE = "summary.json"
#: The resolved config, with ``plugin_dirs`` absolute: what a resume is compared with and inference builds from.
CONFIG_FILE = "config.yaml"
#: Hydra's record of the job (``config.yaml``, ``hydra.yaml``, ``overrides.yaml``), the folder name Hydra uses.
HYDRA_DIR = ".hydra"
#: The command-line overrides that made the run, in :data:`HYDRA_DIR`: ``resume=RUN`` composes them again.
OVERRIDES_FILE = f"{HYDRA_DIR}/overrides.yaml"
#: Held by the one process that writes a run (or launches a sweep): pid, host, start time.
LOCK_FILE = ".zoo.lock"
CHECKPOINTS_DIR = "checkpoints"
#: The best checkpoint by the monitored metric (Lightning adds ``.ckpt``).
BEST_CHECKPOINT_NAME = "best"
#: The checkpoint a run resumes from: always the latest state (zoo.training.callbacks.LastCheckpoint).
LAST_CHECKPOINT = f"{CHECKPOINTS_DIR}/last.ckpt"
#: Weight snapshots kept for checkpoint averaging (``trainer.average_last``/``average_best``:
#: zoo.training.snapshots.WeightSnapshots), one file per kept validation, named by its step.
SNAPSHOTS_DIR = f"{CHECKPOINTS_DIR}/snapshots"
SNAPSHOT_FILE = "step-{step:08d}.ckpt"
#: The kept snapshots with their steps and validation scores, oldest first (what ``zoo average RUN`` reads).
SNAPSHOT_INDEX = f"{SNAPSHOTS_DIR}/index.json"
#: The mean of the kept snapshots, written when training ends; the test scores it where validation prefers it.
AVERAGE_CHECKPOINT = f"{CHECKPOINTS_DIR}/average.ckpt"
#: Where ``zoo average RUN --last N`` (or ``--best N``) writes unless told (``by``: last or best).
AVERAGE_OF_FILE = f"{CHECKPOINTS_DIR}/average-{{by}}-{{n}}.ckpt"
#: Lightning's CSV log, one row per logged step.
METRICS_FILE = "metrics.csv"
#: Its training columns (zoo.training.callbacks.TrainingCurves), on the rows whose ``step`` is a multiple of
#: ``trainer.log_every_n_steps``: that step's batch loss, its learning rate, its gradients' L2 norm before clipping.
TRAIN_LOSS, TRAIN_LR, TRAIN_GRAD_NORM = "train/loss", "train/lr", "train/grad_norm"
#: With self-critical training (``scst.enabled``), also the mean reward of the step's samples and of their baseline.
TRAIN_REWARD, TRAIN_BASELINE = "train/reward", "train/baseline"
#: Versions and the origin of every component (zoo.run.provenance).
PROVENANCE_FILE = "provenance.json"
#: Copies of the plugin folders' sources: ``plugins/<folder name>/<file>.py``.
PLUGINS_DIR = "plugins"
#: One line per test item: id, source (as text), hypothesis, references, every per-item metric score and, for an
#: image, its file's path (``image``) or, for pixels made in memory, a small JPEG (``thumbnail``, a data URI).
TEST_ITEMS_FILE = "test_items.jsonl"
#: One hypothesis per test item.
HYPOTHESES_FILE = "test_hypotheses.txt"
#: The first ``samples`` test items as text.
SAMPLES_FILE = "samples.txt"
#: Attention pictures and explorer pages (``zoo attention``): one folder per source drawn, named after it.
ATTENTION_DIR = "attention"
#: The attention explorer's page inside a source's folder.
EXPLORER_FILE = "explorer.html"
#: Files whose presence means a directory holds a zoo run (finished, failed, running or killed).
RUN_MARKERS = (SUMMARY_FILE, CHECKPOINTS_DIR)

#: A search's Optuna storage in its sweep directory, a journal every worker appends to: every study and trial, so a
#: search resumes, and several processes share it (zoo.search.storage).
STUDY_FILE = "optuna.journal"
#: The SQLite file that held a search's studies before zoo wrote journals; such a search is resumed in it.
SQLITE_STUDY_FILE = "optuna.db"
STUDY_FILES = (STUDY_FILE, SQLITE_STUDY_FILE)
#: The sweeper class of zoo's search (hydra_plugins.zoo_optuna_sweeper), by the end of its Hydra ``_target_``.
SEARCH_SWEEPER = "ZooOptunaSweeper"
