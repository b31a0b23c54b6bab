"""zoo: a plugin-based model zoo for comparing sequence models."""
from zoo.registry import build, register

__version__ = "0.1.0"
__all__ = ["register", "build", "load", "__version__"]


def load(run_dir):
    """A :class:`zoo.inference.Translator` for a finished run directory."""
    from zoo.inference.predictor import Translator

    return Translator.from_run(run_dir)
