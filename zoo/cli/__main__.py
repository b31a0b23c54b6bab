"""``python -m zoo.cli`` is the ``zoo`` command."""

from zoo.cli import main

main()
