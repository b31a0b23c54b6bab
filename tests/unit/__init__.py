"""Unit tests: one piece of zoo at a time, in-process, with no training run, zoo process or browser."""
