"""What the tests share: the checkout's root, tiny run settings, zoo run as a real process, headless Chromium and
the README's blocks. Fixtures stay in tests/conftest.py; larger helpers are modules here (battery, plugins, presets,
tiny_captioner, ...)."""

from helpers.browser import CHROMIUM_FLAGS, watched_page
from helpers.paths import ROOT
from helpers.processes import ForkedZoo, fork_zoo, run_zoo
from helpers.readme import README, fenced_block_after
from helpers.runs import SEARCH_TINY, TINY, train_finished_run, train_plugin_run, write_plugin_folder

__all__ = [
    "CHROMIUM_FLAGS",
    "README",
    "ROOT",
    "SEARCH_TINY",
    "TINY",
    "ForkedZoo",
    "fenced_block_after",
    "fork_zoo",
    "run_zoo",
    "train_finished_run",
    "train_plugin_run",
    "watched_page",
    "write_plugin_folder",
]
