"""Hydra configs: the primary config and presets (a package so Hydra can find it when installed)."""
