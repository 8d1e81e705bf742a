"""Progress of long work, shown in two places at once: a Prefect progress artifact (the UI) and, when the CLI
started the flow, a progress bar in the terminal.

Flows call ``Progress(key, total, description)`` and then ``advance()``/``update()``; the CLI registers a listener
with ``listen()``. Without a Prefect run context (plain function calls in tests) only the listener is used.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Listener = Callable[[str, int, int, str], None]  # (key, done, total, description)

_listeners: list[Listener] = []
_lock = threading.Lock()


@contextmanager
def listen(listener: Listener) -> Iterator[None]:
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)


def _artifact_key(key: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", key.lower()).strip("-") or "progress"


class Progress:
    def __init__(self, key: str, total: int, description: str = ""):
        self.key = _artifact_key(key)
        self.total = max(total, 0)
        self.done = 0
        self.description = description or key
        self._artifact_id = None
        self._lock = threading.Lock()
        try:
            from prefect.artifacts import create_progress_artifact
            from prefect.context import FlowRunContext, TaskRunContext

            if FlowRunContext.get() or TaskRunContext.get():
                self._artifact_id = create_progress_artifact(progress=0.0, key=self.key, description=self.description)
        except Exception:  # the UI is a convenience: never let it break the work
            self._artifact_id = None
        self._emit()

    def _emit(self) -> None:
        with _lock:
            listeners = list(_listeners)
        for fn in listeners:
            fn(self.key, self.done, self.total, self.description)
        if self._artifact_id is not None:
            try:
                from prefect.artifacts import update_progress_artifact

                pct = 100.0 * self.done / self.total if self.total else 100.0
                update_progress_artifact(artifact_id=self._artifact_id, progress=round(pct, 1))
            except Exception:
                pass

    def update(self, done: int, total: int | None = None, description: str | None = None) -> None:
        with self._lock:
            self.done = done
            if total is not None:
                self.total = total
            if description is not None:
                self.description = description
        self._emit()

    def advance(self, n: int = 1, description: str | None = None) -> None:
        with self._lock:
            self.done += n
            if description is not None:
                self.description = description
        self._emit()
