"""Imports go one way, down the layers (``LAYERS``), and no product module reaches itself through its imports."""

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


#: The product's packages, bottom first. A package imports only from packages on lower layers (and itself): records
#: at the bottom; then the LLM gateway and the process helpers; the pure stages; what reads them (evaluation, the
#: warehouse, the training handoff); the flows on top. The rank of each, not the order within a layer, is the rule.
LAYERS: dict[str, int] = {"schemas": 0, "gateway": 1, "tasks": 2, "eval": 3, "warehouse": 3, "training": 3,
                          "flows": 4}


def _modules() -> dict[str, Path]:
    out = {}
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


def _module_imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The product modules a file imports, at any depth, type-only imports included: ``from a.b import c``
    names ``a.b`` and, where ``c`` is a module, ``a.b.c``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        found.update(n for n in names if n in modules)
    return found


def test_no_package_imports_from_a_layer_above_or_beside_it():
    modules = _modules()
    upward = {}
    for name, path in modules.items():
        own = name.split(".")[0]
        bad = sorted(m for m in _module_imports(path, modules)
                     if m.split(".")[0] != own and LAYERS[m.split(".")[0]] >= LAYERS[own])
        if bad:
            upward[name] = bad
    assert upward == {}


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_circles_are_found():
    """The circle finder against circles written here: a three-module ring and a pair, beside a chain."""
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d", "f"}, "f": set(), "g": {"a"}}
    assert sorted(_circles(edges)) == [["a", "b", "c"], ["d", "e"]]
    assert _circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_product_module_reaches_itself():
    """No module circle, lazy imports and type-only imports included: a circle held open by an import inside a
    function is still a circle."""
    modules = _modules()
    edges = {name: _module_imports(path, modules) - {name} for name, path in modules.items()}
    assert _circles(edges) == []


def test_no_product_module_imports_the_test_doubles():
    """The fake endpoint and its scripted readers (``testing``) are for tests and benchmarks only."""
    modules = _modules()
    reaching = {name: sorted(m for m in _imports(path) if m.split(".")[0] in ("testing", "tests", "bench"))
                for name, path in modules.items()}
    assert {k: v for k, v in reaching.items() if v} == {}


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
