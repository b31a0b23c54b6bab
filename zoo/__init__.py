"""zoo: a plugin-based model zoo for comparing sequence models."""

from zoo.registry import build, register

__version__ = "0.1.0"
__all__ = ["register", "build", "load", "__version__"]


def load(run_dir):
    """A :class:`zoo.inference.Predictor` for a finished run directory."""
    from zoo.inference import Predictor

    return Predictor.from_run(run_dir)
