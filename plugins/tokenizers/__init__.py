"""Built-in tokenizers plugins."""
