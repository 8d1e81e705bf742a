"""A small closed-loop HTTP/1.1 load generator for the tool server benchmarks (``bench/bench_tools.py``).

``concurrency`` keep-alive connections each send one request, wait for its reply, and send the next, until a
bounded list of requests is used up (after one untimed request per connection, which opens it). Requests are pre-encoded bytes and replies are read by ``Content-Length``
only, so the client spends a few tens of microseconds per request: a general client (httpx) spent more CPU per
request than the server it measured, and on a 2-core machine that capped every figure at the client's speed.
It runs in its own process (``run_in_process``) so that it does not share an interpreter with the server.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import time
from typing import Any

import orjson


def post(path: str, body: Any, host: str = "127.0.0.1") -> bytes:
    """One pre-encoded ``POST`` with a JSON body, as an RL client sends it."""
    data = orjson.dumps(body)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    )
    return head.encode() + data


async def _read_reply(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
            break
    if length:
        await reader.readexactly(length)
    return status


async def _load(host: str, port: int, requests: list[bytes], concurrency: int) -> dict[str, Any]:
    next_request = iter(range(len(requests)))
    latencies: list[float] = []
    non_200 = 0
    failures: list[str] = []

    async def connection() -> None:
        nonlocal non_200
        reader, writer = await asyncio.open_connection(host, port)
        try:
            # One untimed request first: the figures are for open keep-alive connections, as an RL client holds
            # them, not for the server accepting 256 connections at once.
            writer.write(requests[0])
            await _read_reply(reader)
            for i in next_request:  # one iterator shared by every connection: each request is sent once
                started = time.perf_counter()
                writer.write(requests[i])
                status = await _read_reply(reader)
                latencies.append(time.perf_counter() - started)
                if status != 200:
                    non_200 += 1
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            failures.append(f"{type(exc).__name__}: {exc}")  # counted and reported: the server dropped us
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(concurrency)))
    wall = time.perf_counter() - started
    lat = sorted(latencies) or [float("nan")]

    def pct(p: float) -> float:
        return round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1000, 2)

    return {
        "requests": len(requests), "answered": len(latencies), "non_200": non_200,
        "dropped_connections": len(failures), "first_failure": failures[0] if failures else None,
        "concurrency": concurrency, "rps": round(len(latencies) / wall, 1), "p50_ms": pct(0.5), "p99_ms": pct(0.99),
    }  # fmt: skip


def _child(host: str, port: int, requests: list[bytes], concurrency: int, out: Any) -> None:
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    out.put(asyncio.run(_load(host, port, requests, concurrency)))


def run_in_process(host: str, port: int, requests: list[bytes], concurrency: int, timeout_s: float = 600) -> dict[str, Any]:
    """Send ``requests`` with ``concurrency`` connections from a separate process; its figures."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=_child, args=(host, port, requests, concurrency, out), daemon=True)
    proc.start()
    try:
        return out.get(timeout=timeout_s)
    finally:
        proc.join(10)
        if proc.is_alive():
            proc.terminate()


__all__ = ["post", "run_in_process"]
