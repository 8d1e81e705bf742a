"""Shared test fixtures: the network guard, one Prefect harness per session, the fake LLM endpoint."""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path

import pytest

# Keep Prefect and hub clients quiet and offline before anything imports them.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("DO_NOT_TRACK", "1")
for _var in [v for v in os.environ if v.startswith("HOPFORGE_")]:
    os.environ.pop(_var)


class NetworkBlocked(RuntimeError):
    """A test tried to reach a non-loopback address."""


def _is_loopback(address: object) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    if not isinstance(address, tuple) or not address:
        return False
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name other than localhost: would need DNS, which is the network


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _guarded_connect(self, address):
    if not _is_loopback(address):
        raise NetworkBlocked(f"tests may not open network connections (tried {address!r})")
    return _real_connect(self, address)


def _guarded_connect_ex(self, address):
    if not _is_loopback(address):
        raise NetworkBlocked(f"tests may not open network connections (tried {address!r})")
    return _real_connect_ex(self, address)


def _guarded_getaddrinfo(host, *args, **kwargs):
    if host not in (None, "localhost") and not _is_loopback((host,)):
        raise NetworkBlocked(f"tests may not resolve non-loopback hosts (tried {host!r})")
    return _real_getaddrinfo(host, *args, **kwargs)


@pytest.fixture(autouse=True)
def network_guard(monkeypatch):
    """Any non-loopback connection or name lookup fails inside a test."""
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded_connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", _guarded_getaddrinfo)
    yield


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch):
    """Each test gets its own data directory so warehouses and caches never leak between tests."""
    monkeypatch.setenv("HOPFORGE_DATA_DIR", str(tmp_path / "hopforge-data"))
    # The loopback fake is not the embedded model, so the meaning check's "auto" would put a verifier call before
    # every judge in every flow test, and the fake reads fact sheets only when a test asks it to
    # (``FakeOpenAI.add_fact_reader``). Tests of the check turn it on themselves.
    monkeypatch.setenv("HOPFORGE_QUALITY__MEANING_CHECK", "off")
    yield


@pytest.fixture(scope="session")
def prefect_harness():
    """One Prefect test harness for the whole session (each start costs ~15 s)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture
def fake_llm():
    """A fresh OpenAI-compatible fake server on loopback."""
    from testing.fake import FakeOpenAI

    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent
