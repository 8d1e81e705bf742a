"""Health checks behind `hopforge doctor`: each configured endpoint, the embedding model (the flow checks the warehouse).

Each check returns a ``DoctorCheck`` record; nothing here raises for a failed check.
"""

from __future__ import annotations

import time
from typing import Literal

import numpy as np
from pydantic import BaseModel

from gateway.client import LLMGateway
from gateway.embeddings import Embedder
from schemas.config import ROLES, Settings


class DoctorCheck(BaseModel):
    check: str
    target: str
    ok: bool
    detail: str
    seconds: float


class DoctorReply(BaseModel):
    """A tiny structured answer: proves the endpoint speaks the chat API and follows a JSON schema."""

    status: Literal["ok"]
    colour: str


#: Roles never asked while they are the embedded model (``flows.profiles.profiler_configured``): checked only when
#: they have an endpoint of their own.
REMOTE_ONLY_ROLES: tuple[str, ...] = ("profiler",)


def endpoint_groups(settings: Settings) -> dict[tuple[str, str], list[str]]:
    """Roles grouped by endpoint, so each distinct endpoint is checked once (a role of ``REMOTE_ONLY_ROLES`` left
    to the embedded model is not checked: nothing asks it)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for role in ROLES:
        ep = settings.endpoint(role)
        if ep.is_local and role in REMOTE_ONLY_ROLES:
            continue
        key = ("local", str(settings.local_model.gguf or "default")) if ep.is_local else (ep.base_url or "", ep.model or "")
        groups.setdefault(key, []).append(role)
    return groups


async def check_endpoint(gateway: LLMGateway, roles: list[str]) -> DoctorCheck:
    role = roles[0]
    started = time.perf_counter()
    target = ", ".join(roles)
    result = await gateway.structured(
        role,
        [{"role": "user", "content": "Health check. Set status to ok and name one colour of the sky."}],
        DoctorReply,
        params={"max_tokens": 64, "temperature": 0.0},
        use_cache=False,
        max_reasks=1,
    )
    seconds = time.perf_counter() - started
    try:
        ep = gateway.resolve(role)
        where = f"{ep.model} at {ep.base_url}" + (" (embedded demo-quality model)" if ep.is_local else "")
    except Exception as exc:  # the failure message already says what went wrong
        where = f"unavailable ({exc})"
    if result.ok:
        return DoctorCheck(check="llm", target=target, ok=True, detail=f"{where}: structured reply ok", seconds=seconds)
    return DoctorCheck(check="llm", target=target, ok=False, detail=str(result.failure), seconds=seconds)


async def check_embeddings(embedder: Embedder) -> DoctorCheck:
    started = time.perf_counter()
    try:
        vecs = await embedder.aembed(["a cat sat on the mat", "a kitten sat on a rug", "quarterly tax filing deadlines"])
    except Exception as exc:
        return DoctorCheck(check="embeddings", target=getattr(embedder, "name", "?"), ok=False, detail=str(exc),
                           seconds=time.perf_counter() - started)
    seconds = time.perf_counter() - started
    close, far = float(np.dot(vecs[0], vecs[1])), float(np.dot(vecs[0], vecs[2]))
    ok = vecs.shape == (3, embedder.dim) and close > far
    detail = f"dim {vecs.shape[1]}, cosine(similar)={close:.2f} > cosine(unrelated)={far:.2f}" if ok else (
        f"unexpected embeddings: shape {vecs.shape}, cosine(similar)={close:.2f}, cosine(unrelated)={far:.2f}")
    return DoctorCheck(check="embeddings", target=embedder.name, ok=ok, detail=detail, seconds=seconds)
