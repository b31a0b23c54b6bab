"""Configuration: the typed schema of every section that is not a plugin."""
