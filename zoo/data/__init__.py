"""Data: tokenisation, sampling, collation and the data module."""
