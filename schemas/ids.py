"""Content-derived identifiers: the same inputs always give the same id, so reruns and exports are byte-identical."""

from __future__ import annotations

import hashlib


def content_digest(*parts: str) -> str:
    """sha256 hex digest of the parts, each length-prefixed so ("ab", "c") and ("a", "bc") differ."""
    h = hashlib.sha256()
    for p in parts:
        b = p.encode("utf-8", "surrogatepass")
        h.update(len(b).to_bytes(8, "big"))
        h.update(b)
    return h.hexdigest()
