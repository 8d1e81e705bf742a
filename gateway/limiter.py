"""A concurrency limit shared by every caller in the process, whatever event loop it runs on.

``asyncio.Semaphore`` binds to one event loop, but Prefect runs tasks on worker threads that each drive their
own loop, and a per-endpoint limit must hold across all of them. This limiter keeps its count under a thread
lock and wakes waiters on their own loop with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from contextlib import asynccontextmanager


class SharedLimiter:
    def __init__(self, limit: int):
        if limit < 1:
            raise ValueError(f"a concurrency limit must be at least 1, got {limit}")
        self.limit = limit
        self._lock = threading.Lock()
        self._in_use = 0
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()
        self.peak = 0  # the most slots ever held at once (tests and benchmarks read it)

    @property
    def in_use(self) -> int:
        return self._in_use

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._in_use < self.limit and not self._waiters:
                self._in_use += 1
                self.peak = max(self.peak, self._in_use)
                return
            fut: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, fut))
        try:
            await fut
        except asyncio.CancelledError:
            with self._lock:
                try:
                    self._waiters.remove((loop, fut))
                    granted = False
                except ValueError:
                    granted = True  # the slot was handed to us just as we were cancelled: pass it on
            if granted:
                self.release()
            raise

    def release(self) -> None:
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        with self._lock:
            while self._waiters:
                loop, fut = self._waiters.popleft()
                if loop.is_closed():
                    continue
                # The slot passes directly to the waiter: _in_use stays the same. A waiter on this thread's own
                # loop (every batch shares one loop: gateway.loop) is granted at once; one on another loop through
                # that loop's wake-up pipe.
                if loop is here:
                    _grant(fut)
                else:
                    loop.call_soon_threadsafe(_grant, fut)
                return
            self._in_use -= 1

    @asynccontextmanager
    async def slot(self):
        await self.acquire()
        try:
            yield
        finally:
            self.release()


def _grant(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
    # A future cancelled before this ran was already removed from the queue by its waiter... unless the
    # removal raced with the pop above; acquire() handles that case by releasing the slot it was given.
