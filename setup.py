"""Maps the repository's config/ and plugins/ folders into the package as ``server.bundled.*``.

Everything else is in pyproject.toml; only this mapping needs code, to join the found packages
(``server*``) with the mapped folders and their subfolders (listed, or setuptools warns they
would be left out).
"""

from setuptools import find_namespace_packages, find_packages, setup

BUNDLED = {"server.bundled.config": "config", "server.bundled.plugins": "plugins"}

mapped = [f"{name}.{sub}" for name, folder in BUNDLED.items() for sub in find_namespace_packages(where=folder)]
setup(packages=[*find_packages(include=["server*"]), *BUNDLED, *mapped], package_dir=BUNDLED)
