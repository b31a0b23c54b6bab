"""The package plugin folders are imported under: ``.../my_plugins`` is ``zoo.registry.folders.my_plugins``.

It holds nothing else, so every folder name is free. Importing it mounts the folders
named in ``$ZOO_PLUGIN_DIRS``: a process started with only the environment (a DDP
rank, a joblib or submitit worker unpickling a config) finds a folder plugin under
the name its parent gave it (see :mod:`zoo.registry.discovery`).
"""

from zoo.registry.discovery import mount_env_folders

mount_env_folders()
del mount_env_folders
