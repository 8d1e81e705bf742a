"""The autouse guard closes the network in every test; loopback stays open."""

from __future__ import annotations

import socket

import httpx
import pytest

from tests.conftest import NetworkBlocked


def test_public_address_is_blocked():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    with pytest.raises(NetworkBlocked):
        s.connect(("93.184.216.34", 80))
    s.close()


def test_private_range_and_names_are_blocked():
    with pytest.raises(NetworkBlocked):
        socket.create_connection(("10.1.2.3", 443), timeout=1)
    with pytest.raises(NetworkBlocked):
        socket.getaddrinfo("huggingface.co", 443)


def test_http_client_cannot_reach_a_hub():
    with pytest.raises(Exception) as exc:
        httpx.get("https://huggingface.co/api/models", timeout=2)
    assert "network" in str(exc.value).lower() or isinstance(exc.value, (NetworkBlocked, httpx.ConnectError))


def test_loopback_is_allowed(fake_llm):
    assert httpx.get(fake_llm.base_url.replace("/v1", "/health"), timeout=5).status_code == 200
