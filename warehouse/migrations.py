"""Ordered, numbered warehouse migrations.

Each migration is one file ``warehouse/sql/NNNN_name.sql``. Numbers only grow; a migration, once landed, is
never edited: a change is a new file. ``_migrations`` records what has been applied, so opening an old
warehouse brings it up to date and opening a current one does nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    number: int
    name: str
    sql: str


def load_migrations() -> list[Migration]:
    found = []
    for entry in resources.files("warehouse").joinpath("sql").iterdir():
        m = _FILE.match(entry.name)
        if m:
            found.append(Migration(int(m.group(1)), m.group(2), entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.number)
    check_ordered(found)
    return found


def check_ordered(migrations: list[Migration]) -> None:
    """Numbers must be positive, unique and in order (applied in that order, each once)."""
    numbers = [m.number for m in migrations]
    if numbers != sorted(set(numbers)) or (numbers and numbers[0] < 1):
        raise RuntimeError(f"warehouse migrations must have unique increasing numbers, got {numbers}")


MIGRATIONS: list[Migration] = load_migrations()
