"""One contract for a pipeline step, and one runner that does everything around it.

A step (``Step``) declares what it is and what it does, and nothing else:

- ``flow``: the run's name (the ``runs`` row, the Prefect flow); ``progress`` and ``doing``: the key prefix and the
  words of its progress bars;
- ``roles``: the LLM roles its batches call (the runner resolves them to a picklable gateway and passes it in);
- ``reads`` and ``writes``: the warehouse tables it reads its work from and writes its records to (``writes`` maps
  each table to the record type stored there; ``tests/test_steps.py`` checks every declared step writes only them);
- ``task``: the pure batch function (a Prefect task) that turns one ``Unit`` of work into a ``BatchResult``;
- ``plan``: the units of work, read from the warehouse when the runner asks for the next one (resumable: work with a
  final verdict is not planned again), with ``sizes`` for the in-flight window and ``bar`` for each progress bar
  (one a domain by default); ``reused``: work an earlier run finished that this one takes over, landed first;
  ``next_round``: more units, planned once the round before has landed; ``before``: the flow's own work before a
  unit lands (outside its transaction); ``ahead``: work ahead of the next units (planning them) that the batch loop
  does while it would otherwise wait for a batch to finish;
- ``write``: how one unit's records land (the runner opens the transaction: a unit lands whole or not at all);
- ``summary``: the run's result from everything written;
- ``fails_alone``: a unit whose batch task fails does not stop the run (one domain's graph build, say): nothing of it
  lands, ``failed`` says so, and ``summary`` finds a ``UnitFailure`` for it among what was written, at its place in
  plan order (otherwise, the default, a failed batch stops the run, what landed before it kept);
- ``one_per_process``: the batch task holds process-wide state two runs of it would share (LightRAG's storage
  locks): the thread pool runs one unit at a time, Ray one a worker process (``runner.window`` in flight);
- ``local``: the batch task runs on the flow process's thread pool whatever runner is configured: it reads files of
  the flow's machine (a corpus, graph files), or its one unit is everything the run holds (an export), so a Ray
  worker would only be sent what the flow has already;
- ``own_transaction``: ``write`` lands a unit through a warehouse writer that holds it in one transaction of its
  own (``warehouse.corpus.write_ingest``): the runner opens none and passes ``con=None``.

The runner (``run_step``) owns the rest, the same way for every step: opening the run (row, config, ledger), the
task runner (threads or Ray) and the in-flight window sized from the endpoints' concurrency, batches handed back in
plan order, one transaction per unit, a progress bar per domain, the LLM usage flushed after every unit, and the
ledger's totals in the result. A flow is then its parameter checks and ``run_step(TheStep(...), ...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from flows.batches import BatchResult, batch_runner, endpoint_concurrency, run_batches, typical_size
from flows.progress import Progress
from flows.runtime import Runtime, open_run
from gateway.spec import GatewaySpec
from schemas.config import Settings

J = TypeVar("J")
R = TypeVar("R")


@dataclass
class Unit(Generic[J]):
    """One batch of a step's work: items of one domain and graph snapshot (the graph travels with the batch), and
    what else the batch task needs that belongs to these items only (``extra``)."""

    domain: str
    snapshot: str
    items: list[J]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class UnitFailure(Generic[J]):
    """A unit whose batch task failed, in a step whose units fail alone (``Step.fails_alone``): nothing of it landed.
    The runner hands it to ``Step.failed`` and puts it among what ``summary`` reads, at the unit's place."""

    unit: Unit[J]
    error: BaseException

    @property
    def reason(self) -> str:
        """The failure in a line: the exception's type and message."""
        return f"{type(self.error).__name__}: {self.error}"


class Step(Generic[J, R]):
    """A pipeline step's contract; see the module docstring. Subclasses set the class attributes and implement
    ``plan``, ``parameters``, ``write`` and ``summary``; the runner calls them in that order."""

    flow: ClassVar[str]
    progress: ClassVar[str]
    #: What a progress bar says, with ``{domain}`` ("verifying {domain} gold paths").
    doing: ClassVar[str]
    roles: ClassVar[tuple[str, ...]]
    reads: ClassVar[tuple[str, ...]]
    writes: ClassVar[dict[str, type]]
    task: ClassVar[Any]

    #: Items per batch; ``None``: the concurrency of the roles' endpoints (set by the runner before ``prepare``).
    batch_size: int | None = None
    #: A unit whose batch task fails is recorded (``UnitFailure``) and the others go on; otherwise it stops the run.
    fails_alone: ClassVar[bool] = False
    #: The batch task keeps process-wide state: one unit at a time on the thread pool, one a worker process on Ray.
    one_per_process: ClassVar[bool] = False
    #: The batch task runs on the flow process's thread pool whatever runner is configured (see the module docstring).
    local: ClassVar[bool] = False
    #: ``write`` lands a unit in a transaction of its own (a warehouse writer that opens one): ``con`` is ``None``.
    own_transaction: ClassVar[bool] = False

    def prepare(self, rt: Runtime, spec: GatewaySpec) -> None:
        """Checks and lookups that need the open run (the warehouse, the endpoints), before any work is planned."""

    def plan(self, rt: Runtime) -> Iterator[Unit[J]]:
        raise NotImplementedError

    def sizes(self) -> Sequence[int]:
        """The expected sizes of the batches (for the in-flight window); known once ``prepare`` has run."""
        return []

    def total(self, domain: str) -> int:
        """Items of ``domain`` this run works on (its progress bar's total), once its first unit was planned."""
        raise NotImplementedError

    def bar(self, unit: Unit[J]) -> tuple[str, int, str]:
        """The progress bar ``unit`` advances: its key, total and words (default: one bar per domain)."""
        return f"{self.progress}-{unit.domain}", self.total(unit.domain), self.doing.format(domain=unit.domain)

    def reused(self, rt: Runtime) -> tuple[Unit[J], list[R]] | None:
        """Work an earlier run finished that this one takes over instead of doing again: a unit and its records,
        which land first, through ``write``, like any other unit (``None``: nothing to take over)."""
        return None

    def next_round(self, rt: Runtime) -> Iterator[Unit[J]] | None:
        """The units of another round, planned once every unit of the round before has landed (``None``: done)."""
        return None

    def before(self, rt: Runtime, unit: Unit[J]) -> None:
        """Work of the flow's own, outside the unit's transaction, before ``unit`` lands."""

    def ahead(self, rt: Runtime) -> bool:
        """One piece of work ahead of the next units (planning the next domain, say), done by the batch loop while
        the batches in flight run instead of waiting for one to finish; ``True`` while it did any, ``False`` when
        nothing is left (the default: nothing is done ahead)."""
        return False

    def alongside(self, rt: Runtime) -> AbstractContextManager[Any]:
        """Work that runs beside the batches for the length of the loop (building indexes ahead, say)."""
        return nullcontext()

    def parameters(self, rt: Runtime, spec: GatewaySpec, unit: Unit[J]) -> dict[str, Any]:
        """The batch task's keyword arguments for ``unit`` (picklable: records, a graph, a config, ``spec``)."""
        raise NotImplementedError

    def write(self, rt: Runtime, unit: Unit[J], records: list[R], con: Any) -> list[Any]:
        """Write one unit's records inside the runner's transaction ``con``; return what ``summary`` reads."""
        raise NotImplementedError

    def failed(self, rt: Runtime, failure: UnitFailure[J]) -> None:
        """What the step does when a unit fails alone (``fails_alone``), nothing of it landed: a line saying so."""

    def summary(self, rt: Runtime, written: list[Any]) -> dict[str, Any]:
        """The run's result (the ledger's totals and the run id are added by the runner). With ``fails_alone``,
        ``written`` also holds a ``UnitFailure`` for each unit that failed, at its place in plan order."""
        raise NotImplementedError


K = TypeVar("K")


def by_snapshot(items: Iterable[J], key: Callable[[J], K]) -> list[tuple[K, list[J]]]:
    """``items`` grouped by ``key`` (a snapshot id, or a domain and a snapshot id: a unit's graph travels with it),
    groups in key order and items in their order: how every step cuts its work into units of one snapshot."""
    groups: dict[K, list[J]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return sorted(groups.items(), key=lambda kv: kv[0])  # type: ignore[arg-type,return-value]


def run_step(step: Step[Any, Any], parameters: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """Run ``step`` as one run of the warehouse: see the module docstring. ``parameters`` is the run row's record of
    the call (``flow_parameters``)."""
    cfg = settings.runner.model_copy(update={"kind": "threads", "address": None}) if step.local else settings.runner
    with open_run(step.flow, parameters, settings) as rt, batch_runner(cfg, rt.gateway) as runner:
        spec = runner.spec(*step.roles)
        if step.batch_size is None:
            step.batch_size = endpoint_concurrency(spec, *step.roles)
        step.prepare(rt, spec)
        # One unit a process: the runner's own window (``runner.window`` on Ray, one at a time on threads).
        window = None if step.one_per_process else runner.in_flight(
            typical_size([range(n) for n in step.sizes()], step.batch_size), endpoint_concurrency(spec, *step.roles))
        bars: dict[str, Progress] = {}
        written: list[Any] = []

        def bar(unit: Unit[Any]) -> Progress:
            key, total, words = step.bar(unit)
            if key not in bars:
                bars[key] = Progress(key, total, words)
            bars[key].total = total  # a later round may add to a domain's work
            return bars[key]

        def land(unit: Unit[Any], records: list[Any]) -> None:
            step.before(rt, unit)
            progress = bar(unit)
            # a unit lands whole or not at all: in the runner's transaction, or in the one its writer opens
            with nullcontext() if step.own_transaction else rt.wh.transaction() as con:
                written.extend(step.write(rt, unit, records, con))
            progress.advance(len(unit.items))

        def fail(unit: Unit[Any], error: BaseException) -> None:  # only with ``fails_alone``: nothing lands
            failure = UnitFailure(unit, error)
            step.failed(rt, failure)
            written.append(failure)
            bar(unit).advance(len(unit.items))

        taken = step.reused(rt)
        if taken is not None:
            land(*taken)
        units: Iterator[Unit[Any]] | None = step.plan(rt)
        with step.alongside(rt):
            while units is not None:
                for unit, done in run_batches(step.task, units, runner=runner,
                                              parameters=lambda unit: step.parameters(rt, spec, unit),
                                              in_flight=window, errors="return" if step.fails_alone else "raise",
                                              one_per_process=step.one_per_process, ahead=lambda: step.ahead(rt)):
                    if isinstance(done, BaseException):
                        fail(unit, done)
                    else:
                        result: BatchResult[Any] = done
                        land(unit, result.records)
                    rt.flush_usage()
                units = step.next_round(rt)
        return {"run_id": rt.run_id, **step.summary(rt, written), **rt.gateway.ledger.totals()}


__all__ = ["Step", "Unit", "UnitFailure", "by_snapshot", "run_step"]
