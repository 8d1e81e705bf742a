"""One event loop per process for the batch tasks' LLM calls: ``run_shared``.

A batch task used to drive its coroutines with ``asyncio.run``: a new event loop per batch, and with it a new HTTP
client whose connections were opened for that batch and closed at its end, while the thread pool ran several
batches at once on as many loops, which took turns on the GIL. ``run_shared`` runs the coroutine on one
long-lived loop of this process instead (a daemon thread), so every batch in flight shares one loop and, through
``LLMGateway._client``, one connection pool per endpoint that outlives the batch: no TCP connection is opened
again per batch, and no response waits for another loop's thread to hand the GIL over. The calling thread blocks
until the coroutine is done, as ``asyncio.run`` did; the coroutine sees the caller's context variables (Prefect's
run context, settings), and is cancelled if the caller stops waiting.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_pid: int | None = None
_lock = threading.Lock()


def shared_loop() -> asyncio.AbstractEventLoop:
    """This process's shared loop, started on first use (again after a fork: the thread does not survive it)."""
    global _loop, _pid
    with _lock:
        if _loop is None or _pid != os.getpid() or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=_serve, args=(loop,), name="gateway-loop", daemon=True).start()
            _loop, _pid = loop, os.getpid()
        return _loop


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    loop.run_forever()


def running_shared_loop() -> asyncio.AbstractEventLoop | None:
    """This process's shared loop if it was started here and still runs (None otherwise; starts nothing)."""
    loop = _loop
    if loop is None or _pid != os.getpid() or loop.is_closed() or not loop.is_running():
        return None
    return loop


def is_shared(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` is this process's shared loop."""
    return loop is _loop and _pid == os.getpid()


def run_shared(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the shared loop and return its result (or raise its exception), blocking the calling
    thread, like ``asyncio.run``. Not from the shared loop itself (it would wait on itself)."""
    loop = shared_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        coro.close()
        raise RuntimeError("run_shared called from the shared loop itself: await the coroutine instead")
    ctx = contextvars.copy_context()
    done: concurrent.futures.Future[T] = concurrent.futures.Future()
    task: list[asyncio.Task[T]] = []

    def start() -> None:
        if not done.set_running_or_notify_cancel():
            coro.close()
            return
        t = loop.create_task(coro, context=ctx)
        task.append(t)
        t.add_done_callback(lambda t: _settle(t, done))

    loop.call_soon_threadsafe(start)
    try:
        return done.result()
    except BaseException:
        if not done.done():  # the caller stopped waiting (interrupted): the coroutine must not run on alone
            loop.call_soon_threadsafe(lambda: task and task[0].cancel())
        raise


def _settle(t: asyncio.Task[T], done: concurrent.futures.Future[T]) -> None:
    if done.done():
        return
    if t.cancelled():
        done.set_exception(asyncio.CancelledError())
    elif t.exception() is not None:
        done.set_exception(t.exception())
    else:
        done.set_result(t.result())
