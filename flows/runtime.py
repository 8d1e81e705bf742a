"""What a running flow holds: settings, the warehouse (the flow is its only writer), the gateway, the run record.

Every flow follows one pattern::

    with open_run("doctor", params, settings) as rt:      # writes a `runs` row with status "running"
        records = some_task(rt, batch)                    # tasks compute records; they never write
        rt.wh.write_batch("table", records)               # the flow writes, one transaction per batch
    # on exit: status, end time and LLM usage totals are written; usage per role goes to `llm_usage`
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from prefect.flows import Flow

from flows.checks import writable_folder
from gateway.cache import ResponseCache
from gateway.client import LLMGateway
from gateway.embeddings import Embedder, shared_embedder
from gateway.usage import UsageLedger
from schemas.config import Settings, load_settings
from schemas.errors import HopforgeError, InputError
from warehouse.db import Warehouse


def failure_line(exc: BaseException) -> str:
    """An expected failure's message on one line (what the CLI prints after its label)."""
    return " ".join(str(exc).split())


class _ExpectedFailureFilter(logging.Filter):
    """Prefect logs a failed task or flow run with the exception's traceback. For an expected failure (a
    ``HopforgeError``: bad input, a locked warehouse...) the message already says what to do, so the record keeps
    its one line and loses the traceback; a bug keeps it. A record whose text does not carry the failure (the
    deployment engine's "Engine execution exited with unexpected exception", which had only its traceback to
    say what) gets the one line appended."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HopforgeError):
            record.exc_info = None
            record.exc_text = None
            line, text = failure_line(exc), record.getMessage()
            if line not in text:
                record.msg, record.args = f"{text}: {line}", None
        return True


def quiet_expected_failures() -> None:
    """Install the filter on the loggers Prefect's engines log run failures to (idempotent)."""
    for name in ("prefect.flow_runs", "prefect.task_runs", "prefect.engine", "prefect.flow_engine",
                 "prefect.task_engine"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _ExpectedFailureFilter) for f in logger.filters):
            logger.addFilter(_ExpectedFailureFilter())


quiet_expected_failures()


def _failed_states_say_one_line() -> None:
    """A flow or task run that ends with an expected failure gets that failure's one line as its state message
    (what the UI shows beside "Failed"), not Prefect's "Flow run encountered an exception: InputError: ..." or
    "Validation of flow parameters failed with error: ...". Prefect's engines build the failed state with
    ``exception_to_failed_state``; this wraps the names they call (``prefect==3.8.*`` is pinned; a Prefect
    without them keeps its own messages). A bug's state keeps Prefect's message."""
    import functools
    import inspect

    try:
        from prefect import flow_engine, task_engine
    except ImportError:  # pragma: no cover - prefect is a core dependency
        return

    def say(state: Any, exc: BaseException | None) -> Any:
        if isinstance(exc, HopforgeError) and state is not None:
            state.message = failure_line(exc)
        return state

    for module, name in ((flow_engine, "exception_to_failed_state"), (task_engine, "exception_to_failed_state"),
                         (task_engine, "exception_to_failed_state_sync")):  # fmt: skip
        original = getattr(module, name, None)
        if original is None or getattr(original, "_hopforge_one_line", False):
            continue
        if inspect.iscoroutinefunction(original):
            async def wrapper(exc: BaseException | None = None, *args: Any, _original: Any = original,
                              **kwargs: Any) -> Any:  # fmt: skip
                return say(await _original(exc, *args, **kwargs), exc)
        else:
            def wrapper(exc: BaseException | None = None, *args: Any, _original: Any = original,
                        **kwargs: Any) -> Any:  # fmt: skip
                return say(_original(exc, *args, **kwargs), exc)
        wrapper = functools.wraps(original)(wrapper)
        wrapper._hopforge_one_line = True  # type: ignore[attr-defined]
        setattr(module, name, wrapper)


_failed_states_say_one_line()


def _prompt_heartbeat_exit() -> None:
    """Let a flow run end as soon as its body does, with heartbeats unchanged.

    Prefect's synchronous flow engine sends the run's heartbeats from a daemon thread that sleeps in one-second
    steps, and joins that thread when the run ends, so every flow run lasts until the next whole second of its
    heartbeat clock: ~1 s on a run that finds nothing to do (a resumed or cached rerun), ~0.5 s on average on
    the others. Prefect's asynchronous engine does not join (``join_on_exit=False``): the thread sees the stop
    signal at its next step and returns without another heartbeat. This makes the synchronous engine do the
    same. A Prefect without this internal (``prefect==3.8.*`` is pinned) keeps its own behaviour.
    """
    try:
        from prefect import flow_engine
    except ImportError:  # pragma: no cover - prefect is a core dependency
        return
    original = getattr(flow_engine, "_send_heartbeats", None)
    if original is None or getattr(original, "_hopforge_no_join", False):
        return
    import inspect

    if "join_on_exit" not in inspect.signature(original).parameters:
        return

    def _send_heartbeats(engine: Any, join_on_exit: bool = True) -> Any:
        return original(engine, join_on_exit=False)

    _send_heartbeats._hopforge_no_join = True  # type: ignore[attr-defined]
    _send_heartbeats.__wrapped__ = original  # type: ignore[attr-defined]
    flow_engine._send_heartbeats = _send_heartbeats


_prompt_heartbeat_exit()


def code_version() -> str:
    """The git commit of the code (with ``-dirty`` for local edits), or the package version outside a checkout."""
    root = Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=5
        )
        if sha.returncode == 0:
            dirty = subprocess.run(
                ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True, text=True, timeout=5,
            )
            return sha.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        from importlib.metadata import version

        return "hopforge-" + version("hopforge")
    except Exception:
        return "unknown"


@dataclass
class Runtime:
    run_id: str
    flow: str
    settings: Settings
    wh: Warehouse
    gateway: LLMGateway
    _embedder: Embedder | None = field(default=None, repr=False)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = shared_embedder(self.settings.embeddings)
        return self._embedder

    @property
    def data_dir(self) -> Path:
        return self.settings.data_dir

    def flush_usage(self) -> None:
        """Write this run's usage so far (idempotent: rows are keyed by run and role)."""
        rows = self.gateway.ledger.rows(self.run_id)
        if rows:
            self.wh.write_batch("llm_usage", rows, replace=True)
        totals = self.gateway.ledger.totals()
        self.wh.execute(
            "UPDATE runs SET llm_calls = ?, llm_cache_hits = ?, prompt_tokens = ?, completion_tokens = ?, "
            "llm_failures = ? WHERE run_id = ?",
            [totals["llm_calls"], totals["llm_cache_hits"], totals["prompt_tokens"], totals["completion_tokens"],
             totals["llm_failures"], self.run_id],
        )


def flow_parameters(fn: Any, values: dict[str, Any]) -> dict[str, Any]:
    """Every parameter of the flow function ``fn`` with its value in ``values`` (the flow's ``locals()`` after it
    resolved its defaults), all but ``settings`` (recorded as the run's config): the run row keeps the whole call,
    not a hand-picked part of it. Typed options (pydantic models) are kept as their JSON form, tuples as lists."""
    import inspect

    from pydantic import BaseModel

    def plain(value: Any) -> Any:
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json")
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value

    names = inspect.signature(getattr(fn, "fn", fn)).parameters
    return {n: plain(values.get(n)) for n in names if n != "settings"}


def _flow_function(module: str, name: str) -> Callable[..., Any]:
    """The function of the flow ``name`` of ``module`` (what a pickled flow's ``fn`` comes back as)."""
    import importlib

    return getattr(importlib.import_module(module), name).fn


class _FlowFunctionByName:
    """Pickles as a reference to a flow's function: unpickled, it is that function itself."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __reduce__(self) -> Any:
        return (_flow_function, (self.module, self.name))


class HopforgeFlow(Flow):
    """A Prefect flow whose typed parameters refuse a bad value with an expected failure naming the parameter, the
    value given and what is allowed, before the flow body runs: a deployment run, ``prefect deployment run -p`` and
    a Python call all get it. A flow with a parameter model (``flows.params``) is checked by it first, so the line
    is the command line's; Prefect's check (the model Prefect builds from the signature, shown in the UI's run
    form) follows, and is the only one for a flow without a model."""

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickled with its function by reference. ``flow.serve()`` runs each flow run in a spawned process that
        gets the flow by unpickling it; the module attribute named like the function is the flow, not the
        function, so cloudpickle would pickle the function by value, with only the globals its code uses: its
        annotations (strings, under ``from __future__ import annotations``) would not resolve there, and every run
        would fail its parameter validation with pydantic's "not fully defined"."""
        reduced = super().__reduce_ex__(protocol)
        module, name = self.fn.__module__, self.fn.__name__
        owner = getattr(sys.modules.get(module), name, None)
        if not (isinstance(owner, Flow) and owner.fn is self.fn and len(reduced) > 2 and isinstance(reduced[2], dict)):
            return reduced
        state = {**reduced[2], "fn": _FlowFunctionByName(module, name)}
        return (reduced[0], reduced[1], state, *reduced[3:])

    def __copy__(self) -> "HopforgeFlow":
        """A shallow copy, as for any object (``copy`` would otherwise go through ``__reduce_ex__``)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def validate_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        import pydantic
        from prefect._internal.pydantic.validated_func import ValidatedFunction
        from prefect.utilities.callables import parameters_to_args_kwargs

        from flows.params import is_parameter, model_of

        model = model_of(self.fn.__module__, self.fn.__name__)
        if model is not None:  # the model's line, as the command line and the flow body refuse the value
            model.check_call({k: v for k, v in parameters.items()
                              if k in model.model_fields and is_parameter(model, k)})
        args, kwargs = parameters_to_args_kwargs(self.fn, parameters)
        try:  # the check Prefect's own validation makes, kept with pydantic's details (the value given)
            ValidatedFunction(self.fn, config=pydantic.ConfigDict(arbitrary_types_allowed=True)).validate_call_args(
                args, kwargs)  # fmt: skip
        except pydantic.ValidationError as exc:
            problems = []
            for err in exc.errors():
                where = str(err["loc"][0]) + "".join(f"[{x!r}]" if isinstance(x, str) else f"[{x}]" for x in err["loc"][1:])
                given = "" if "input" not in err or err["type"].startswith(("missing", "unexpected")) else (
                    f" (given {err['input']!r})")
                problems.append(f"{where}: {err['msg']}{given}")
            raise InputError(f"bad parameter(s) for flow {self.name!r}: " + "; ".join(problems)) from None
        return super().validate_parameters(parameters)


def hopforge_flow(**options: Any) -> Callable[[Callable[..., Any]], HopforgeFlow]:
    """``@flow(...)`` for hopforge's flows: a ``HopforgeFlow`` with the same options."""

    def wrap(fn: Callable[..., Any]) -> HopforgeFlow:
        return HopforgeFlow(fn, **options)

    return wrap


#: The runs this process has open. A ``running`` row of any other run cannot be alive once this process holds
#: the warehouse for writing (DuckDB admits one writing process), so ``open_run`` marks it ``crashed``.
_LIVE_RUNS: set[str] = set()


def mark_crashed(wh: Warehouse) -> list[str]:
    """Mark the runs left ``running`` by a process that ended without recording an end (killed, out of memory,
    power cut) as ``crashed``; return their ids. Runs this process has open are left alone."""
    stale = [r["run_id"] for r in wh.query(
        "SELECT run_id FROM runs WHERE status = 'running' AND NOT list_contains(?::VARCHAR[], run_id) "
        "ORDER BY started_at", [sorted(_LIVE_RUNS)])]
    if stale:
        wh.execute(
            "UPDATE runs SET status = 'crashed', ended_at = coalesce(ended_at, ?), error = coalesce(error, ?) "
            "WHERE list_contains(?::VARCHAR[], run_id) AND status = 'running'",
            [datetime.now(), "the process running it ended without recording an end (killed or crashed); "
             "found by the next run", stale])
    return stale


def new_run_id(flow: str) -> str:
    return f"{flow}-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


@contextmanager
def open_run(
    flow: str,
    parameters: dict[str, Any] | None = None,
    settings: Settings | None = None,
    *,
    gateway: LLMGateway | None = None,
    wh: Warehouse | None = None,
) -> Iterator[Runtime]:
    """Open the warehouse, record the run, and close everything with the final status whatever happens."""
    settings = settings or load_settings()
    run_id = new_run_id(flow)
    own_wh = wh is None
    if own_wh:
        writable_folder(settings.data_dir, "the data dir")  # DuckDB writes its .wal there at the first commit
    wh = wh or Warehouse(settings.warehouse_path, lock_wait_s=settings.lock_wait_s)
    if gateway is None:
        cache = ResponseCache(
            settings.cache_path,
            mode=settings.cache.mode,
            scope=run_id if settings.cache.scope == "run" else settings.cache.scope,
        )
        gateway = LLMGateway(settings, cache=cache, ledger=UsageLedger())
    rt = Runtime(run_id=run_id, flow=flow, settings=settings, wh=wh, gateway=gateway)
    try:
        crashed = mark_crashed(wh)
        if crashed:
            print(f"marked {len(crashed)} run(s) left 'running' by a process that ended as crashed: "
                  f"{', '.join(crashed)}")
        _LIVE_RUNS.add(run_id)
        wh.write_batch(
            "runs",
            [{
                "run_id": run_id,
                "flow": flow,
                "parameters": json.dumps(parameters or {}, sort_keys=True, default=str),
                "config": json.dumps(settings.redacted(), sort_keys=True, default=str),
                "config_hash": settings.config_hash(),
                "code_version": code_version(),
                "started_at": datetime.now(),
                "status": "running",
            }],
        )
    except BaseException:
        # The run was never recorded: nothing to mark, but a warehouse this call opened is closed, so a
        # long-lived process (a worker) can open the file again.
        _LIVE_RUNS.discard(run_id)
        if own_wh:
            wh.close()
        raise
    status, error = "completed", None
    try:
        yield rt
    except BaseException as exc:
        status, error = ("cancelled" if isinstance(exc, KeyboardInterrupt) else "failed"), f"{type(exc).__name__}: {exc}"
        raise
    finally:
        try:
            rt.flush_usage()
            wh.execute(
                "UPDATE runs SET status = ?, error = ?, ended_at = ? WHERE run_id = ?",
                [status, error, datetime.now(), run_id],
            )
        finally:
            _LIVE_RUNS.discard(run_id)
            if own_wh:
                wh.close()


def default_settings() -> Settings:
    """Settings from the environment and HOPFORGE_CONFIG; used when a flow is started by Prefect."""
    return load_settings(os.environ.get("HOPFORGE_CONFIG"))
