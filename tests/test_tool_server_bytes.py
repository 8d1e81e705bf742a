"""The tool server's replies, byte for byte, on a generated graph: the same as before the server's hot path
(orjson fast path, result cache, calls on the event loop, workers) was added.

``GOLDEN`` is the SHA-256 of every reply (status, content type, body) to ``requests()``, recorded with the
server as it was before that change; the SFT data and rollouts already hold these texts. The requests cover
exact, normalised, misspelt and unknown names, names with quotes, newlines and non-ASCII text, hubs above the
inline limit, both Omne-R1 endpoints and the generic ones, and the malformed bodies FastAPI answers itself.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random

import httpx
from fastapi.testclient import TestClient

from flows.tool_server import create_app
from schemas.graph import Entity, Relation
from tasks.env.index import HashingEmbedder
from tasks.env.tools import ToolEnvironment
from tasks.graph.kg import KnowledgeGraph

GOLDEN = "ce13b4df3405de47261c62202dffc125bb3c2c4e8e7be9944f12073ab5ce5852"

WORDS = "river valley harvest engine network theory protein market empire treaty reactor algorithm signal".split()
ODD = ["Zoë Ångström", 'The "Quoted" One', "Line\nBreak", "Tab\tName", "东京 大学", "O'Brien & Sons", "naïve café"]


def generated_graph(seed: int = 7, n: int = 400) -> KnowledgeGraph:
    """A seeded graph with a few hubs, odd names, labelled directed and unlabelled undirected relations."""
    rng = random.Random(seed)
    names = [f"{rng.choice(WORDS).title()} {rng.choice(WORDS)} {i}" for i in range(n - len(ODD))] + ODD
    entities = [
        Entity(domain="gen", name=name, type=rng.choice(["person", "place", "UNKNOWN", ""]),
               description=" ".join(rng.choice(WORDS) for _ in range(rng.randrange(0, 60))) + rng.choice(["", "\n  é.", " ✓"]))
        for name in names
    ]  # fmt: skip
    relations, seen = [], set()
    hubs = names[:3] + ODD[:2]
    while len(relations) < 3 * n:
        a = rng.choice(hubs) if rng.random() < 0.4 else rng.choice(names)
        b = rng.choice(names)
        label = rng.choice(["part of", "uses", ""])
        if a == b or (a, b, label) in seen or (b, a, label) in seen:
            continue
        seen.add((a, b, label))
        relations.append(
            Relation(domain="gen", source=a, target=b, relation=label, directed=bool(label),
                     keywords=rng.sample(WORDS, rng.randrange(0, 11)), weight=rng.choice([1.0, 2.0, 0.5]),
                     description=" ".join(rng.choice(WORDS) for _ in range(rng.randrange(0, 50))))
        )  # fmt: skip
    return KnowledgeGraph.from_records("gen", entities, relations, directed=True)


def requests(graph: KnowledgeGraph) -> list[tuple[str, str | None, bytes]]:
    """``(path, content type, body)`` for every request of the check."""
    rng = random.Random(11)
    names = graph.nodes()
    queries = names[:5] + ODD + rng.sample(names, 40)
    queries += [q.lower() for q in queries[:20]] + [q[:-1] + "x" for q in queries[:30]]
    queries += ["Nobody at all", "  spaced   out  ", "x" * 200, "東京"]
    out: list[tuple[str, str | None, bytes]] = []
    js = "application/json"
    for q in queries:
        body = json.dumps({"node_name": q}).encode()
        out += [("/gen/get_node", js, body), ("/gen/get_precise_entity_names", js, body)]
        out.append(("/tools/search", js, json.dumps({"entity": q, "graph_type": "gen"}).encode()))
        out.append(("/tools/neighbor_search", js, json.dumps({"entity": q, "relation": "uses"}).encode()))
    out += [
        ("/gen/get_node", js, b"not json"),
        ("/gen/get_node", js, b'{"node_name": ""}'),
        ("/gen/get_node", js, b'{"node_name": 5}'),
        ("/gen/get_node", js, b'{"name": "x"}'),
        ("/gen/get_node", js, b"[1, 2]"),
        ("/gen/get_node", js, json.dumps({"node_name": "y" * 201}).encode()),
        ("/gen/get_node", js, b'{"node_name": NaN}'),
        ("/gen/get_node", js, b'{"node_name": "a", "node_name": "Zo\\u00eb \\u00c5ngstr\\u00f6m"}'),
        ("/gen/get_node", js, b'{"node_name": "\\ud800"}'),
        ("/gen/get_node", "application/json; charset=utf-8", json.dumps({"node_name": names[0]}).encode()),
        ("/gen/get_node", "text/plain", json.dumps({"node_name": names[0]}).encode()),
        ("/gen/get_node", None, json.dumps({"node_name": names[0]}).encode()),
        ("/other/get_node", js, json.dumps({"node_name": names[0]}).encode()),
        ("/gen/get_precise_entity_names", js, b'{"node_name": "Zo\\u00eb", "extra": [1]}'),
    ]
    return out


def reply_digest(replies: list[tuple[int, str, bytes]]) -> str:
    h = hashlib.sha256()
    for status, content_type, body in replies:
        h.update(f"{status} {content_type} {len(body)}\n".encode())
        h.update(body)
    return h.hexdigest()


def send_all(app, reqs: list[tuple[str, str | None, bytes]]) -> list[tuple[int, str, bytes]]:
    out = []
    with TestClient(app) as client:
        for path, content_type, body in reqs:
            headers = {"content-type": content_type} if content_type else {}
            r = client.post(path, content=body, headers=headers)
            out.append((r.status_code, r.headers.get("content-type", ""), r.content))
    return out


def environment() -> ToolEnvironment:
    return ToolEnvironment.from_graphs([generated_graph()], HashingEmbedder())


def test_replies_are_byte_identical_to_the_recorded_ones():
    env = environment()
    reqs = requests(env.indexes["gen"].graph)
    # A low inline limit sends the hubs through the thread pool and the rest through the event loop.
    app = create_app(env, inline_degree=8)
    first = send_all(app, reqs)
    assert reply_digest(first) == GOLDEN
    assert send_all(app, reqs) == first  # second pass: answered from the result cache
    assert send_all(create_app(env, cache_chars=0, inline_degree=0), reqs) == first


async def test_concurrent_replies_match_one_by_one_replies():
    """Coalesced entity_matcher batches and the event-loop path give the replies of lone calls."""
    env = environment()
    reqs = [r for r in requests(env.indexes["gen"].graph) if r[1] == "application/json"]
    expected = send_all(create_app(env, cache_chars=0), reqs)
    app = create_app(env, max_batch=8)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://tools.test") as c:
            replies = await asyncio.gather(
                *(c.post(path, content=body, headers={"content-type": ct or ""}) for path, ct, body in reqs)
            )
    assert [(r.status_code, r.headers.get("content-type", ""), r.content) for r in replies] == expected


def test_prerendered_node_info_replies_are_the_rendered_ones():
    from flows.tool_server import NodeInfoReplies

    env = environment()
    reqs = requests(env.indexes["gen"].graph)
    replies = NodeInfoReplies.render(env)
    assert len(replies) == len(env.indexes["gen"])
    index = env.indexes["gen"]
    for asked in ("Zoë Ångström", " zoë ångström ", ODD[2], index.names[0].upper()):
        text = env.call("node_info", {"node_name": asked, "graph_type": "gen"}).text
        assert replies.get(index, asked) == json.dumps({"rendered_content": text}, ensure_ascii=False,
                                                       separators=(",", ":")).encode()  # fmt: skip
    assert replies.get(index, "Nobody at all") is None  # answered by the tool (closest names), not from here
    app = create_app(env, node_info_replies=replies, cache_chars=0)
    assert reply_digest(send_all(app, reqs)) == GOLDEN
