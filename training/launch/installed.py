"""The versions of the packages a trainer environment trains with, read in that environment (launchers record them
in ``result.json`` and in their ``--check`` report)."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterable


def installed_versions(names: Iterable[str]) -> dict[str, str]:
    """``{package: version}`` for those of ``names`` installed here; the others are left out."""
    found = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found
