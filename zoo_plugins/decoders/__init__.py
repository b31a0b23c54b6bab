"""Built-in decoders plugins."""
