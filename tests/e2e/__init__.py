"""End-to-end tests: real runs of zoo (training, sweeps, zoo as a process, Chromium, wheels); all marked slow."""
