"""zoo's built-in components, installed as ``zoo_plugins`` and loaded through the
``zoo.plugins`` entry point exactly like a third-party plugin. Every module
below registers one kind of component; copy any of them to write your own."""
