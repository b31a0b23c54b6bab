"""Positional encodings (kind ``posenc``)."""
