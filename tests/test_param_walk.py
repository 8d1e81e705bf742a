"""``n_seeds`` and the IKG levels walk down the layers once: checked at the top (``flows.params``), handed by the flows
to one lower-layer entry point (``tasks.qa.seed_plan.SeedPlan``, ``tasks.env.ikg.IKGLevels``), and carried from
there without a return to ``flows/`` (docs/reference/layout.md, "Where n_seeds and the IKG levels go").

Checked statically (ast): the modules below ``flows/`` that the walk passes through reach no ``flows`` module through
their imports; a ``flows`` function that takes one of the values only hands it on, as a call's argument, to other
flows functions and to at most one call below ``flows``; and no ``flows`` code reads it back off what it handed down
(an attribute ``n_seeds``, ``levels`` or ``level``: a plan's count, a variant's level), the configuration's
``[ikg] levels`` (``settings.ikg.levels``), where the export's levels come from, apart."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("schemas", "gateway", "tasks", "eval", "warehouse", "training", "flows")

#: The parameters the walk follows, as the flows name them.
WALKED = ("n_seeds", "ikg_levels", "eval_ikg_levels", "levels")
#: Attributes whose read in ``flows/`` would take a walked value back off a lower layer's object.
READ_BACK = ("n_seeds", "levels", "level")
#: The modules below ``flows/`` that ``n_seeds`` and the IKG levels pass through.
BELOW = ("tasks.qa.seed_plan", "tasks.qa.seeds", "tasks.qa.seed_rule", "tasks.qa.refill", "tasks.qa.generate",
         "tasks.env.ikg", "tasks.distill.ikg_rollouts", "tasks.distill.ikg_template", "tasks.export.datasets",
         "eval.ikg", "eval.evaluate")
#: Where each value leaves ``flows/``: the function and the one lower-layer callable it is handed to.
EXITS = {("flows.qa", "resolve_generation", "n_seeds"): "tasks.qa.seed_plan.SeedPlan",
         ("flows.meaning_report", "run_graph", "n_seeds"): "tasks.qa.seed_plan.SeedPlan",
         ("flows.evaluate", "evaluate_policy", "ikg_levels"): "tasks.env.ikg.IKGLevels.of",
         ("flows.evaluate", "evaluate_policy", "settings.ikg.levels"): "tasks.env.ikg.IKGLevels.of",
         ("flows.ikg_data", "ikg_export_data", "settings.ikg.levels"): "tasks.env.ikg.IKGLevels.of"}
#: Flows functions that choose which of their own parameters a nested flow run gets (``generate_qa``'s ``n_seeds``:
#: per mode, per set of domains); they hand nothing below ``flows/``.
FLOW_TO_FLOW = {("flows.factory", "_questions"), ("flows.refresh", "_questions")}


def _module_path(name: str) -> Path:
    base = ROOT.joinpath(*name.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _imports(tree: ast.AST) -> dict[str, str]:
    """Each imported name of a module (top level or lazy) -> the dotted name it stands for."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[(a.asname or a.name).split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _product_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return {n for n in found if n.split(".")[0] in PRODUCT and _module_path(n).is_file()}


def test_the_modules_below_flows_on_the_walk_reach_no_flows_module():
    seen: set[str] = set()
    todo = list(BELOW)
    reached_flows: dict[str, str] = {}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = _module_path(name)
        assert path.is_file(), f"{name} is on the walk but has no module"
        for imported in _product_imports(path):
            if imported.startswith("flows"):
                reached_flows[name] = imported
            todo.append(imported)
    assert reached_flows == {}


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def _callee(call: ast.Call, imports: dict[str, str], module: str, local: set[str]) -> str:
    """The callable a call names, dotted from its module where the name is imported or defined in ``module``;
    otherwise as written (a method of an object, a builtin)."""
    dotted = _dotted(call.func) or "<expression>"
    root, _, rest = dotted.partition(".")
    if root in imports:
        return imports[root] + (f".{rest}" if rest else "")
    if root in local:
        return f"{module}.{dotted}"
    return dotted


def _handed_to(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.Call | None:
    """The call ``node`` is an argument of (through the branches of a conditional expression), else None."""
    child, parent = node, parents.get(node)
    while isinstance(parent, ast.IfExp) and child is not parent.test:
        child, parent = parent, parents.get(parent)
    if isinstance(parent, ast.keyword):
        child, parent = parent, parents.get(parent)
    if isinstance(parent, ast.Call) and child is not parent.func:
        return parent
    return None


def _is_config_levels(node: ast.AST) -> bool:
    """``<x>.ikg.levels``: the configuration's IKG levels, where the export's come from."""
    return (isinstance(node, ast.Attribute) and node.attr == "levels" and isinstance(node.value, ast.Attribute)
            and node.value.attr == "ikg")


def _flows_modules() -> dict[str, ast.Module]:
    return {".".join(p.relative_to(ROOT).with_suffix("").parts): ast.parse(p.read_text(encoding="utf-8"))
            for p in sorted((ROOT / "flows").rglob("*.py"))}


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _walk_report() -> tuple[list[str], dict[tuple[str, str, str], list[str]]]:
    """Every use of a walked value in ``flows/`` that is not a hand-off, and per function and value the callables
    below ``flows/`` it is handed to."""
    problems: list[str] = []
    handed: dict[tuple[str, str, str], list[str]] = {}
    for module, tree in _flows_modules().items():
        imports, parents = _imports(tree), _parents(tree)
        local = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        for fn in _functions(tree):
            args = fn.args
            params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]} & set(WALKED)
            uses = [(n.id, n) for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id in params
                    and isinstance(n.ctx, ast.Load)]
            uses += [("settings.ikg.levels", n) for n in ast.walk(fn) if _is_config_levels(n)]
            for value, node in uses:
                if any(node in set(ast.walk(inner)) for inner in _functions(fn) if inner is not fn):
                    continue  # a nested function's own use, checked with it
                call = _handed_to(node, parents)
                where = f"{module}.{fn.name} line {node.lineno}: {value}"
                if call is None:
                    if (module, fn.name) not in FLOW_TO_FLOW and value != "settings.ikg.levels":
                        problems.append(f"{where} is used, not handed on")
                    continue
                callee = _callee(call, imports, module, local)
                if not callee.startswith("flows."):
                    handed.setdefault((module, fn.name, value), []).append(callee)
    return problems, handed


def test_the_flows_hand_each_value_down_once_and_never_read_it_back():
    problems, handed = _walk_report()
    assert problems == []
    assert {k: v for k, v in handed.items() if len(v) > 1} == {}  # one lower-layer entry point a function
    assert handed == {k: [v] for k, v in EXITS.items()}
    read_back = [f"{module} line {n.lineno}: .{n.attr}" for module, tree in _flows_modules().items()
                 for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in READ_BACK
                 and isinstance(n.ctx, ast.Load) and not _is_config_levels(n)]
    assert read_back == []


def test_the_flow_to_flow_hand_offs_reach_no_lower_layer():
    trees = _flows_modules()
    for module, name in FLOW_TO_FLOW:
        [fn] = [f for f in _functions(trees[module]) if f.name == name]
        called = {_dotted(c.func) for c in ast.walk(fn) if isinstance(c, ast.Call)}
        assert "generate_qa" in called, (module, name)
