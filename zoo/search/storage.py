"""Where a search keeps its studies: ``hydra.sweeper.storage``, an Optuna journal file or a database.

Every worker of a search (:mod:`zoo.search.workers`) opens the same storage. The default is a journal file,
:data:`STUDY_FILE` in the sweep directory: Optuna's ``JournalStorage`` appends every change to one log under a
lock file, which is what Optuna recommends on a shared filesystem (NFS, Lustre) where no database server runs,
and SQLite is not safe. An SQLAlchemy URL (``postgresql://``, ``mysql://``, ``sqlite:///``) names a database
instead; any other value is the path of a journal file. A sweep directory made before zoo wrote journals holds
:data:`SQLITE_STUDY_FILE`, which is opened as it is, so such a search resumes where it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zoo.errors import first_line
from zoo.run.layout import SQLITE_STUDY_FILE, STUDY_FILE
from zoo.search.space import SearchError

#: What a URL has and a file path has not.
SCHEME = "://"


def location(setting: str | None, sweep_dir: Path) -> str:
    """The storage as a URL or a journal file's path: ``setting``, else the sweep directory's own file."""
    if setting:
        return str(setting)
    older = sweep_dir / SQLITE_STUDY_FILE
    return f"sqlite:///{older.resolve()}" if older.is_file() else str((sweep_dir / STUDY_FILE).resolve())


def stored_search(setting: str | None, sweep_dir: Path) -> Any | None:
    """The storage when it may hold a search already (a database, or a journal file that exists), else None; a
    journal whose folder does not exist is refused all the same. Makes nothing: a command checked before Hydra
    starts leaves no file behind."""
    where = location(setting, sweep_dir)
    if SCHEME in where or Path(where).is_file():
        return open_storage(setting, sweep_dir)
    if setting and not Path(where).parent.is_dir():  # (the sweep directory is made when the search starts)
        raise refused(where, f"folder {Path(where).parent} does not exist")
    return None


def open_storage(setting: str | None, sweep_dir: Path) -> Any:
    """The Optuna storage :func:`location` names, opened; one that cannot be is a :class:`SearchError` naming it and
    the forms that work, not Optuna's or SQLAlchemy's traceback."""
    where = location(setting, sweep_dir)
    return open_database(where) if SCHEME in where else open_journal(Path(where))


def open_database(url: str) -> Any:
    import optuna
    from sqlalchemy.exc import SQLAlchemyError

    try:
        return optuna.storages.RDBStorage(url)
    except (SQLAlchemyError, ImportError) as error:  # ImportError: Optuna's word for a database without a driver
        raise refused(url, first_line(error)) from None


def open_journal(path: Path) -> Any:
    """A journal file's storage (made on first use); its folder must exist, and a file there must be a journal."""
    import optuna

    if not path.parent.is_dir():
        raise refused(str(path), f"folder {path.parent} does not exist")
    try:
        from optuna.storages.journal import JournalFileBackend as Backend
    except ImportError:  # Optuna before 4.0
        from optuna.storages import JournalFileStorage as Backend
    try:
        storage = optuna.storages.JournalStorage(Backend(str(path)))
        optuna.get_all_study_names(storage)  # reads the whole log: a file that is not a journal is refused here
    except (OSError, ValueError) as error:
        raise refused(str(path), f"not an Optuna journal: {first_line(error)}") from None
    return storage


def refused(where: str, why: str) -> SearchError:
    return SearchError(
        f"hydra.sweeper.storage={where} cannot be opened ({why}): give the path of a journal file in a folder that "
        "exists, an SQLAlchemy database URL (postgresql://USER@HOST/DB or mysql://USER@HOST/DB with its driver "
        f"installed, sqlite:///PATH), or null for {STUDY_FILE} in the sweep directory"
    )
