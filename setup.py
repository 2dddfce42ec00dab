"""Installs the folder ``server/`` as the package ``taskwire``, with the repository's ``config/``
and ``plugins/`` folders inside it as ``taskwire.bundled.*``.

Everything else is in pyproject.toml; only this mapping needs code. The folder keeps the name the
project was laid out with (DESIGN.md, and the tools that read ``server/``); what is installed is
named ``taskwire``, so nothing generic lands at the top of a user's environment. Subfolders are
listed (setuptools warns of a data folder left out otherwise); ``plugins/openhands-agent-server``
is a distribution of its own (``taskwire-openhands``) and stays out of this one.
"""

from setuptools import find_namespace_packages, find_packages, setup

PACKAGE_DIR = {"taskwire": "server", "taskwire.bundled.config": "config", "taskwire.bundled.plugins": "plugins"}

packages = ["taskwire", *(f"taskwire.{name}" for name in find_packages(where="server"))]
for name, folder in list(PACKAGE_DIR.items())[1:]:
    packages.append(name)
    packages += [f"{name}.{sub}" for sub in find_namespace_packages(where=folder, exclude=["openhands-agent-server*"])]
setup(packages=packages, package_dir=PACKAGE_DIR)
