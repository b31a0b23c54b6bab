"""Contract tests: every registered component against the contract of its kind (zoo.checks)."""
