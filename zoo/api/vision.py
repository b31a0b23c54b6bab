"""Helpers for images: :class:`ImageStore` (images decoded once into a memory-mapped cache), :class:`Fit`,
:func:`as_image`, :func:`to_float`; precomputed image features (:class:`FeatureTable`, :func:`load_features`);
:func:`names_image_file`, for a prediction input that names an image file."""

from zoo.data.features import FeatureTable, load_features
from zoo.data.images import Fit, ImageStore, as_image, names_image_file, to_float

__all__ = ["ImageStore", "Fit", "as_image", "to_float", "FeatureTable", "load_features", "names_image_file"]
