"""What a role resolves to: the concrete endpoint a call goes to.

Its own module so that the gateway client and the embedded server (``gateway.local``, which the client starts on
demand) both import it without importing each other.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from schemas.errors import EndpointError


@dataclass(frozen=True)
class ResolvedEndpoint:
    role: str
    base_url: str
    model: str
    api_key: str
    structured: str
    sampling: dict[str, Any]
    max_concurrency: int
    timeout_s: float
    max_retries: int
    extra_body: dict[str, Any]
    is_local: bool
    api_key_env: str | None = None


class EndpointUnavailable(EndpointError):
    """The endpoint for a role could not be made available (e.g. the embedded model failed to start)."""


def limit_name(ep: ResolvedEndpoint) -> str:
    """The Prefect global concurrency limit of an endpoint: one per (server, model), like the in-process limiter."""
    digest = hashlib.sha256(f"{ep.base_url}|{ep.model}".encode()).hexdigest()[:12]
    return f"hopforge-endpoint-{digest}"
