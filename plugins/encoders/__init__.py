"""Built-in encoders plugins."""
