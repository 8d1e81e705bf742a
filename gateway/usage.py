"""LLM usage accounting per (run, role): calls, cache hits, tokens, latency, retries, failures by kind.

The gateway updates a ``UsageLedger`` from any thread; the flow reads ``rows()`` and writes them to the
warehouse (the flow is the single writer).
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RoleUsage:
    role: str
    model: str | None = None
    calls: int = 0  # requests that reached the endpoint (retries included)
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s_total: float = 0.0
    latency_s_max: float = 0.0
    retries: int = 0
    reasks: int = 0
    failures: Counter = field(default_factory=Counter)

    def as_row(self, run_id: str) -> dict[str, Any]:
        return {
            "run_id": run_id,
            "role": self.role,
            "model": self.model,
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_s_total": round(self.latency_s_total, 6),
            "latency_s_max": round(self.latency_s_max, 6),
            "retries": self.retries,
            "reasks": self.reasks,
            "failures": dict(sorted(self.failures.items())),
        }


class UsageLedger:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_role: dict[str, RoleUsage] = {}

    def _get(self, role: str) -> RoleUsage:
        if role not in self._by_role:
            self._by_role[role] = RoleUsage(role)
        return self._by_role[role]

    def record_call(self, role: str, model: str, *, latency_s: float, prompt_tokens: int, completion_tokens: int) -> None:
        with self._lock:
            u = self._get(role)
            u.model = model
            u.calls += 1
            u.latency_s_total += latency_s
            u.latency_s_max = max(u.latency_s_max, latency_s)
            u.prompt_tokens += prompt_tokens
            u.completion_tokens += completion_tokens

    def record_cache_hit(self, role: str, model: str) -> None:
        with self._lock:
            u = self._get(role)
            u.model = model
            u.cache_hits += 1

    def record_retry(self, role: str, kind: str) -> None:
        with self._lock:
            u = self._get(role)
            u.retries += 1
            u.failures[f"retried_{kind}"] += 1

    def record_reask(self, role: str) -> None:
        with self._lock:
            self._get(role).reasks += 1

    def record_failure(self, role: str, kind: str) -> None:
        with self._lock:
            self._get(role).failures[kind] += 1

    def snapshot(self) -> list[RoleUsage]:
        """A picklable copy of the counts (a task sends it back with its records)."""
        with self._lock:
            return [RoleUsage(**{**u.__dict__, "failures": Counter(u.failures)}) for u in self._by_role.values()]

    def merge(self, usages: list[RoleUsage]) -> None:
        """Add the counts of another ledger (a task's, returned with its records) to this one."""
        with self._lock:
            for other in usages:
                u = self._get(other.role)
                u.model = other.model or u.model
                u.calls += other.calls
                u.cache_hits += other.cache_hits
                u.prompt_tokens += other.prompt_tokens
                u.completion_tokens += other.completion_tokens
                u.latency_s_total += other.latency_s_total
                u.latency_s_max = max(u.latency_s_max, other.latency_s_max)
                u.retries += other.retries
                u.reasks += other.reasks
                u.failures.update(other.failures)

    def role(self, role: str) -> RoleUsage:
        with self._lock:
            return self._get(role)

    def rows(self, run_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [u.as_row(run_id) for _, u in sorted(self._by_role.items())]

    def totals(self) -> dict[str, int]:
        with self._lock:
            return {
                "llm_calls": sum(u.calls for u in self._by_role.values()),
                "llm_cache_hits": sum(u.cache_hits for u in self._by_role.values()),
                "prompt_tokens": sum(u.prompt_tokens for u in self._by_role.values()),
                "completion_tokens": sum(u.completion_tokens for u in self._by_role.values()),
                "llm_failures": sum(
                    n for u in self._by_role.values() for k, n in u.failures.items() if not k.startswith("retried_")
                ),
            }
