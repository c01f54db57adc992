"""The distribution's packages, found rather than listed (everything else is in pyproject.toml).

The import name is the distribution's own (transformer_trace) while the folders keep their names (generator/, models/),
so pyproject's ``packages.find`` cannot name them: it names a package after its folder. Here every folder under the two
package folders whose name Python could import is a package of the wheel, templates and assets included (as namespace
packages: no __init__.py needed), so a folder added later ships without a list to update and setuptools has no folder
of data to warn about ("Package would be ignored"). Their files ship through pyproject's package-data.
"""

from __future__ import annotations

from setuptools import find_namespace_packages, setup

# the import name -> its folder (pyproject's package-dir says the same)
PACKAGE_FOLDERS = {"transformer_trace": "generator", "transformer_trace.models": "models"}


def packages_under(name: str, folder: str) -> list[str]:
    found = find_namespace_packages(folder, exclude=["__pycache__", "*.__pycache__"])
    return [name, *(f"{name}.{package}" for package in found
                    if all(part.isidentifier() for part in package.split(".")))]


setup(packages=[package for name, folder in PACKAGE_FOLDERS.items() for package in packages_under(name, folder)])
