"""The KG tool server's shared token, and which addresses count as loopback.

A tool server that listens beyond loopback (``hopforge serve-tools --host 0.0.0.0``) takes requests only with
``Authorization: Bearer <token>``, the token being ``$HOPFORGE_TOOL_TOKEN`` of the server's environment. Every
client (the verl tool class on each rollout node, the launcher's health checks) sends the same variable of its own
environment. The token is read from the environment only: hopforge never writes it into a config file, a plan, a
command line or a log.

Standard library only: the tool server, the RL planner and the verl tool class (inside verl's Ray workers) all
import it.
"""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit

TOKEN_ENV = "HOPFORGE_TOOL_TOKEN"


def tool_token() -> str | None:
    """The shared token of this process's environment (``None`` when unset or blank)."""
    value = os.environ.get(TOKEN_ENV, "").strip()
    return value or None


def auth_headers(token: str | None) -> dict[str, str]:
    """The request headers that carry ``token`` (none without one)."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` names this machine only (``localhost``, 127.0.0.0/8, ``::1``): a server bound there, or a
    URL pointing there, is unreachable from other machines."""
    host = host.strip().strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_host(url: str) -> str:
    """The host part of an http(s) URL (``http://10.0.0.5:8765/x`` -> ``10.0.0.5``)."""
    return urlsplit(url).hostname or ""


__all__ = ["TOKEN_ENV", "auth_headers", "is_loopback_host", "tool_token", "url_host"]
