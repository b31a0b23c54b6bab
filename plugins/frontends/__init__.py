"""Built-in frontends plugins."""
