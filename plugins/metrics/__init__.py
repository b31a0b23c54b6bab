"""Built-in metrics."""
