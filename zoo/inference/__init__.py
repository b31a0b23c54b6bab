"""Inference: use a finished run through its task."""

from zoo.inference.predictor import InputError, Predictor, RunLoadError

__all__ = ["InputError", "Predictor", "RunLoadError"]
