"""Checks of flow parameters that need no LLM and no write: the parameter models (``flows.params``) run them, so
the flows before they record a run and the CLI before Prefect starts refuse a bad argument with one clear
``InputError`` at once, never a traceback after a flow start, and never a half-changed warehouse; and checks that
need the configuration or the warehouse (seed ball bounds against ``settings.seeds``, known domains).

Each check names the parameter as a deployment passes it (``n_seeds``) and, where the CLI spells it differently,
its option (``--seeds``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, get_args

from schemas.corpus import DOMAIN_NAME
from schemas.errors import InputError

MODES: tuple[str, ...] = ("candidates", "free")
HOP_CLASSES: tuple[str, ...] = ("1-2", "3+")
SPLIT_NAMES: tuple[str, ...] = ("train", "validation", "test")
GraphKind = Literal["graphml", "lightrag", "triples", "rog"]


def _name(param: str, option: str | None) -> str:
    return f"{param} ({option})" if option else param


def at_least(value: Any, low: float, param: str, option: str | None = None, what: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= low:
        raise InputError(f"{_name(param, option)} must be at least {low:g}, got {value!r}{f' ({what})' if what else ''}")


def positive(value: Any, param: str, option: str | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or math.isinf(value):
        raise InputError(f"{_name(param, option)} must be a positive number, got {value!r}")


def check_domain_names(domains: Sequence[str] | None) -> None:
    for d in domains or []:
        if not isinstance(d, str) or not DOMAIN_NAME.match(d):
            raise InputError(f"{d!r} is not a valid domain name: use 1-40 lowercase letters, digits or '_', starting "
                             "with a letter (e.g. cs, biology)")


def check_known_domains(domains: Sequence[str] | None, known: Sequence[str], what: str, how: str) -> None:
    """Every asked-for domain must be one the warehouse has ``what`` for (``known``)."""
    check_domain_names(domains)
    missing = [d for d in domains or [] if d not in known]
    if missing:
        have = ", ".join(known) if known else "none yet"
        raise InputError(f"no {what} for domain(s) {', '.join(missing)}; domains with {what}: {have}. {how}")


_BALL = "nodes in a seed's depth-3 neighbourhood, centre included"


def check_ball_bounds(min_ball: Any, max_ball: Any, *, from_config: Sequence[str] = ()) -> None:
    """The seed ball bounds: whole numbers of at least 1, ``max_ball`` at least ``min_ball``. None is "not given"
    (the configuration's value applies). ``from_config`` names the bounds that came from the configuration
    (``seeds.min_ball`` / ``seeds.max_ball``), so the message says where to change them."""

    def name(param: str) -> str:
        return f"seeds.{param} (configuration)" if param in from_config else _name(param, "--" + param.replace("_", "-"))

    for param, value in (("min_ball", min_ball), ("max_ball", max_ball)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{name(param)} must be a whole number of at least 1, got {value!r} ({_BALL})")
    if min_ball is not None and max_ball is not None and max_ball < min_ball:
        raise InputError(f"{name('max_ball')} is {max_ball}, below {name('min_ball')} {min_ball}: a seed's depth-3 "
                         "neighbourhood must hold min_ball to max_ball nodes; raise max_ball or lower min_ball")


def seed_ball_bounds(min_ball: Any, max_ball: Any, configured: Any) -> tuple[int, int]:
    """The seed ball bounds of a run: the given ``min_ball`` / ``max_ball``, else the configuration's
    (``configured``: ``settings.seeds``), checked together (``check_ball_bounds``)."""
    from_config = [p for p, v in (("min_ball", min_ball), ("max_ball", max_ball)) if v is None]
    lo = configured.min_ball if min_ball is None else min_ball
    hi = configured.max_ball if max_ball is None else max_ball
    check_ball_bounds(lo, hi, from_config=from_config)
    return lo, hi


def shares(given: Mapping[str, float], names: Sequence[str], param: str, hint: str) -> None:
    """``given`` maps some of ``names`` to shares between 0 and 1 that add up to 1 (``hint``: how to set them)."""
    if not isinstance(given, Mapping) or not given:
        raise InputError(f"{param} must map {', '.join(names)} to shares, got {given!r}")
    unknown = [k for k in given if k not in names]
    if unknown:
        raise InputError(f"{param} has unknown key(s) {unknown}; the keys are {', '.join(names)}")
    for k, v in given.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise InputError(f"{param}[{k!r}] must be a share between 0 and 1, got {v!r}{f' ({hint})' if hint else ''}")
    total = sum(given.values())
    if not math.isclose(total, 1.0, abs_tol=1e-6):
        raise InputError(f"the shares of {param} must add up to 1, got {total:g} ({dict(given)})")


def writable_folder(path: Path, what: str) -> None:
    """``path`` is (or can be made) a folder this process can write; else an ``InputError`` naming it."""
    import os

    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise InputError(f"{what} {path} cannot be written: {probe} is a file, not a folder; move it away or "
                         "choose another data_dir")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise InputError(f"{what} {path} cannot be written: {probe} is not writable by this user (its permissions, "
                         "a read-only mount or an immutable folder); fix that or choose another data_dir")
    if probe.is_dir():  # permission bits do not tell a read-only mount, an immutable folder or a full disk
        import tempfile

        try:
            fd, name = tempfile.mkstemp(dir=probe, prefix=".hopforge-probe-")
            os.close(fd)
            os.unlink(name)
        except OSError as exc:
            raise InputError(f"{what} {path} cannot be written: creating a file in {probe} failed ({exc.strerror}); "
                             "fix the folder (a read-only mount, an immutable folder, a full disk) or choose "
                             "another data_dir") from None


def warehouse_domains(wh: Any) -> list[str]:
    """Every domain the warehouse has heard of: in documents, graphs or questions."""
    rows = wh.query("SELECT domain FROM documents UNION SELECT domain FROM graph_snapshots UNION "
                    "SELECT domain FROM qa ORDER BY domain")
    return [r["domain"] for r in rows]


def check_domains_in(wh: Any, domains: Sequence[str] | None) -> None:
    """Each asked-for domain must be one the warehouse knows (a misspelt name is an error, not an empty run).
    An empty warehouse knows none: there the flow's own "nothing to do yet" applies."""
    if domains:
        known = warehouse_domains(wh)
        if known:
            check_known_domains(domains, known, "documents, graphs or questions",
                                "Check the spelling, or ingest / import that domain first.")


GRAPH_KINDS: tuple[str, ...] = get_args(GraphKind)


def check_graph_kind(kind: Any) -> Any:
    """``kind`` if it names a graph file kind (``None``: by the file's suffix), else a ``GraphImportError``."""
    from tasks.graph.importers import GraphImportError

    if kind is not None and kind not in GRAPH_KINDS:
        raise GraphImportError(f"unknown graph kind {kind!r}; choose from {', '.join(GRAPH_KINDS)} "
                               "(or leave it out to pick by the file's suffix)")
    return kind


def check_graph_files(files: dict[str, str], kind: str | None, *, allow_new_domains: bool = False) -> None:
    """What can be refused about graph files before a run: the kind, domain names, paths that are not files.

    Domains follow ``schemas.corpus.check_domain``, the rule ``ingest`` applies: a name outside the UltraDomain
    names needs ``allow_new_domains`` (``hopforge graph import --allow-new-domains``)."""
    from schemas.corpus import check_domain
    from tasks.graph.importers import GraphImportError

    check_graph_kind(kind)
    if not isinstance(files, dict) or not files:
        raise GraphImportError(f"no graph files given: files maps a domain to a file, got {files!r}")
    for domain, path in files.items():
        check_domain(domain, where=str(path), allow_new_domains=allow_new_domains, error=GraphImportError,
                     fix="give another with -d")
        p = Path(path)
        if p.is_dir():
            raise GraphImportError(f"{path} (domain {domain}) is a directory; give a graph file (.graphml, "
                                   "triples .tsv/.jsonl or RoG .jsonl)")
        if not p.is_file():
            raise GraphImportError(f"{path} (domain {domain}): no such file")
