"""The gateway as a picklable value: what a task on another thread, process or Ray worker needs to call the LLMs.

The flow resolves every role it will use (starting the embedded model there, once) and hands a ``GatewaySpec`` to
its tasks; a task turns it into a gateway with ``GatewaySpec.open()``. The spec carries:

- the resolved endpoints, so a worker calls the flow's embedded server instead of starting its own;
- where the response cache lives: every worker reads and writes the same cache, so an answer given to any worker
  is never asked for again, not by a retried task, another worker or a rerun (see the README's section on Ray);
- whether each request must also hold a slot of the endpoint's Prefect global concurrency limit, which is how the
  per-endpoint limit holds across worker processes (inside one process the gateway's own limiter does it).

Usage is counted by the task's own ledger and travels back with its result (``usage_rows``), so the flow, the
single writer, records it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from gateway.cache import CacheMode, ResponseCache
from gateway.client import LLMGateway
from gateway.endpoints import EndpointUnavailable, ResolvedEndpoint
from gateway.usage import UsageLedger
from schemas.config import Settings


@dataclass(frozen=True)
class GatewaySpec:
    settings: Settings
    endpoints: dict[str, ResolvedEndpoint] = field(default_factory=dict)
    cache_path: str = ""
    cache_mode: CacheMode = "on"
    cache_scope: str = "global"
    global_limits: bool = False

    def open(self):
        """A gateway for this task: this process's shared cache connection, a fresh usage ledger."""
        return LLMGateway(self.settings, cache=_cache(self.cache_path, self.cache_mode, self.cache_scope),
                          ledger=UsageLedger(), resolved=self.endpoints, global_limits=self.global_limits)


_CACHES: dict[tuple[str, str, str], ResponseCache] = {}
_CACHES_LOCK = threading.Lock()


def _cache(path: str, mode: CacheMode, scope: str) -> ResponseCache:
    """One cache object per process and location (it keeps one SQLite connection per thread)."""
    key = (path, mode, scope)
    with _CACHES_LOCK:
        cache = _CACHES.get(key)
        if cache is None:
            cache = _CACHES[key] = ResponseCache(Path(path), mode=mode, scope=scope)
        return cache


def spec_for(gateway, roles: list[str] | tuple[str, ...], *, global_limits: bool = False) -> GatewaySpec:
    """The spec of a flow's gateway for ``roles`` (resolved now, in the flow process)."""
    endpoints: dict[str, ResolvedEndpoint] = {}
    for role in roles:
        try:
            endpoints[role] = gateway.resolve(role)
        except EndpointUnavailable:
            # Left unresolved: the task's gateway tries again and turns the failure into typed per-call failures
            # (rejects with a reason), as the flow's own gateway would.
            continue
    cache = gateway.cache
    return GatewaySpec(settings=gateway.settings, endpoints=endpoints, cache_path=str(Path(cache.path).resolve()),
                       cache_mode=cache.mode, cache_scope=cache.scope, global_limits=global_limits)
