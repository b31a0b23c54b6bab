"""Built-in datasets plugins."""
