"""No product function runs past ``MAX_LINES`` lines (``def`` to its last line) unless its docstring says why,
with a sentence beginning "Long because"."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 80
REASON = "Long because"

#: Functions over ``MAX_LINES`` without a reason yet, as ``(path, qualified name)``. The list is to shrink: split
#: each along its jobs (or give it a "Long because" reason) and take it off. An entry whose function is gone, is now
#: short, or now gives its reason fails the test, so the list cannot outlive its functions.
ALLOWED_LONG: frozenset[tuple[str, str]] = frozenset()


def product_packages() -> list[str]:
    """The top-level packages the project installs (``[tool.setuptools.packages.find] include`` in pyproject.toml)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["packages"]["find"]["include"]
    return sorted({re.split(r"[.*]", p, maxsplit=1)[0] for p in patterns})


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method under ``tree`` with its qualified name (``Class.method``, ``outer.inner``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{prefix}{node.name}"
            yield name, node
            yield from _functions(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def long_functions() -> dict[tuple[str, str], tuple[int, int, bool]]:
    """``(path, qualified name) -> (line, length, gives a reason)`` of every product function over ``MAX_LINES``."""
    out = {}
    for package in product_packages():
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
            for name, node in _functions(tree):
                length = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if length > MAX_LINES:
                    out[(rel, name)] = (node.lineno, length, REASON in (ast.get_docstring(node) or ""))
    return out


def _all_functions() -> set[tuple[str, str]]:
    out = set()
    for rel, _ in ALLOWED_LONG:
        path = ROOT / rel
        if path.is_file():
            out.update((rel, name) for name, _ in _functions(ast.parse(path.read_text(encoding="utf-8"))))
    return out


def test_the_product_packages_are_found() -> None:
    packages = product_packages()
    assert {"flows", "tasks", "schemas", "gateway"} <= set(packages)
    assert all((ROOT / p / "__init__.py").is_file() for p in packages), packages


def test_no_long_function_without_a_reason() -> None:
    offenders = [f"{rel}:{line} {name} ({length} lines)"
                 for (rel, name), (line, length, reasoned) in sorted(long_functions().items())
                 if not reasoned and (rel, name) not in ALLOWED_LONG]  # fmt: skip
    assert not offenders, (
        f"functions over {MAX_LINES} lines without a '{REASON} ...' sentence in their docstring; split them along "
        "their jobs, or say why they read best whole:\n  " + "\n  ".join(offenders)
    )


def test_the_allow_list_holds_only_long_functions() -> None:
    long = long_functions()
    existing = _all_functions()
    stale = []
    for rel, name in sorted(ALLOWED_LONG):
        if (rel, name) not in existing:
            stale.append(f"{rel} {name}: no such function")
        elif (rel, name) not in long:
            stale.append(f"{rel} {name}: now {MAX_LINES} lines or fewer")
        elif long[(rel, name)][2]:
            stale.append(f"{rel} {name}: its docstring now gives its reason")
    assert not stale, "take these off ALLOWED_LONG:\n  " + "\n  ".join(stale)
