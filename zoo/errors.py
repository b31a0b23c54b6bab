"""The base of every error zoo reports to a user as one line (no traceback).

Raise a subclass with a message that says what is wrong and what to do.
"""


class ZooError(Exception):
    """A user-facing error: bad config, missing data, incompatible components, corrupt checkpoint."""
