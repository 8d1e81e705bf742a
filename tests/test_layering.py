"""Imports go one way: stages and evaluation never import the training handoff; the gateway has no circle."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports inside functions count too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_tasks_and_eval_do_not_import_training_or_flows():
    upward = {}
    for package in ("tasks", "eval", "gateway", "schemas", "warehouse"):
        for path in sorted((ROOT / package).rglob("*.py")):
            bad = sorted(m for m in _imports(path) if m.split(".")[0] in ("training", "flows"))
            if bad:
                upward[str(path.relative_to(ROOT))] = bad
    assert upward == {}


def test_gateway_modules_import_no_circle():
    modules = {p.stem: p for p in (ROOT / "gateway").glob("*.py") if p.stem != "__init__"}
    edges = {name: {m.split(".")[1] for m in _imports(path) if m.startswith("gateway.")} for name, path in modules.items()}

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        for nxt in edges.get(start, ()):
            if nxt == target or (nxt not in seen and reaches(nxt, target, seen | {nxt})):
                return True
        return False

    circles = sorted(name for name in edges if reaches(name, name, {name}))
    assert circles == []


def test_no_task_takes_the_runtime_the_warehouse_or_a_connection():
    """Batch tasks get picklable inputs only, so any task runner (threads, Ray) can run them."""
    holders = {"Runtime", "Warehouse", "DuckDBPyConnection", "LLMGateway"}
    offenders = []
    for path in sorted((ROOT / "flows").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef):
                continue
            is_task = any(
                (isinstance(d, ast.Call) and getattr(d.func, "id", None) == "task") or getattr(d, "id", None) == "task"
                for d in node.decorator_list
            )
            if not is_task:
                continue
            for arg in node.args.args + node.args.kwonlyargs:
                text = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                if arg.arg in ("rt", "wh", "con") or any(h in text for h in holders):
                    offenders.append(f"{path.name}:{node.name}({arg.arg}: {text})")
    assert offenders == []


def test_stage_packages_never_touch_the_warehouse():
    """Stage logic takes and returns records; the warehouse (and its stores) are the flow process's alone: no
    import of ``warehouse`` (not even a type-only one), and no function taking a warehouse or a connection."""
    reaching = {}
    for package in ("tasks", "eval", "gateway", "schemas"):
        for path in sorted((ROOT / package).rglob("*.py")):
            bad = sorted(m for m in _imports(path) if m.split(".")[0] == "warehouse")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    for arg in node.args.args + node.args.kwonlyargs:
                        text = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                        if arg.arg in ("wh", "con") or any(h in text for h in ("Warehouse", "DuckDBPyConnection")):
                            bad.append(f"{node.name}({arg.arg}: {text})")
            if bad:
                reaching[str(path.relative_to(ROOT))] = bad
    assert reaching == {}
