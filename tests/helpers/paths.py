"""Where the checkout is."""

from pathlib import Path

#: The checkout's root (README.md, zoo/, tests/).
ROOT = Path(__file__).resolve().parents[2]
