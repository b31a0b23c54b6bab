"""Inference: use a finished run through its task."""
from zoo.inference.predictor import Predictor, RunLoadError

__all__ = ["Predictor", "RunLoadError"]
