"""The entity index built through an embeddings endpoint: in parts, concurrently, cached per snapshot and embedder,
and resumed where a failed build stopped (the fake's endpoint, counted request by request)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from gateway.embeddings import EmbeddingError, OpenAIEmbedder
from testing.fake import FakeOpenAI, Fault
from schemas.config import EmbeddingConfig
from schemas.graph import Entity
from tasks.env.index import GraphIndex, _parts_dir, _unit_rows, entity_text
from tasks.graph.kg import KnowledgeGraph

N = 300  # entities
PART = 50  # rows a part (embed_batch_size), so a build has 6 parts
BATCH = 10  # texts a request: 5 requests a part, 30 a build


def _graph(snapshot_id: str | None = "snap-a", n: int = N) -> KnowledgeGraph:
    entities = [Entity(domain="cs", name=f"Entity {i:04d}", description=f"thing number {i}") for i in range(n)]
    return KnowledgeGraph.from_records("cs", entities, [], snapshot_id=snapshot_id)


def _embedder(fake: FakeOpenAI, concurrency: int = 1, model: str = "fake-embed", dim: int = 16) -> OpenAIEmbedder:
    return OpenAIEmbedder(EmbeddingConfig(base_url=fake.base_url, model=model, dim=dim, batch_size=BATCH,
                                          max_concurrency=concurrency))


def _one_go(kg: KnowledgeGraph, embedder: OpenAIEmbedder) -> np.ndarray:
    """The matrix embedded in one call over every text, no parts, no cache."""
    texts = [entity_text(e.name, e.description) for e in kg.entities()]
    return _unit_rows(np.asarray(embedder.embed(texts), dtype=np.float32))


class _RefuseAfter:
    """Delegates to ``inner``; once ``parts`` index parts went through, the fake refuses every embeddings request
    (HTTP 400: the client does not retry it), as an endpoint that fails mid-index."""

    def __init__(self, inner: OpenAIEmbedder, fake: FakeOpenAI, parts: int) -> None:
        self.inner, self.fake, self.parts, self.done = inner, fake, parts, 0
        self.name, self.dim = inner.name, inner.dim
        self.batch_size, self.max_in_flight = inner.batch_size, inner.max_in_flight

    def embed(self, texts):
        if self.done == self.parts:
            self.fake.set_embedding_fault(Fault(status=400))
        out = self.inner.embed(texts)
        self.done += 1
        return out


@pytest.fixture
def fake():
    with FakeOpenAI(embedding_dim=16) as server:
        yield server


@pytest.mark.parametrize("concurrency", [1, 4])
def test_index_through_the_endpoint_equals_one_go(fake, tmp_path, concurrency):
    kg = _graph()
    emb = _embedder(fake, concurrency)
    index = GraphIndex(kg, emb, cache_dir=tmp_path, embed_batch_size=PART)
    before = fake.calls("/embeddings")
    built = np.array(index.embeddings)
    assert fake.calls("/embeddings") - before == N // BATCH
    assert np.array_equal(built, _one_go(kg, emb))
    assert index.cache_path().exists() and not _parts_dir(index.cache_path()).exists()  # parts spent
    again = GraphIndex(kg, emb, cache_dir=tmp_path, embed_batch_size=PART)
    before = fake.calls("/embeddings")
    assert np.array_equal(again.embeddings, built) and fake.calls("/embeddings") == before  # from the cache


def test_parts_run_beside_each_other_at_the_endpoints_concurrency(tmp_path):
    """Six parts of five requests that each take 0.5 s at the endpoint: at concurrency 10 the parts' requests are
    in flight beside each other (checked by the requests' arrival order and answer times, not by the build's
    duration), and in flight at once never exceeds the endpoint's max_concurrency."""
    with FakeOpenAI(embedding_dim=16, embedding_fault=Fault(latency_s=0.5)) as slow:
        emb = _embedder(slow, concurrency=10)
        GraphIndex(_graph(), emb, cache_dir=tmp_path, embed_batch_size=PART).warm()
        reqs = sorted((r.time, r.time + r.delay_s) for r in slow.requests if r.path.endswith("/embeddings"))
    assert len(reqs) == N // BATCH
    most = max(sum(1 for a, b in reqs if a <= t < b) for t, _ in reqs)
    assert most > PART // BATCH, f"at most {most} requests in flight at once: the parts did not overlap"
    assert most <= 10


def test_a_failure_mid_index_is_one_line_and_the_rerun_embeds_only_what_is_missing(fake, tmp_path):
    kg = _graph()
    emb = _embedder(fake)
    with pytest.raises(EmbeddingError) as err:
        GraphIndex(kg, _RefuseAfter(emb, fake, parts=2), cache_dir=tmp_path, embed_batch_size=PART).warm()
    message = str(err.value)
    assert "\n" not in message
    assert f"100 of {N} entities embedded and kept for the next run" in message and "'cs'" in message
    assert "400" in message
    index = GraphIndex(kg, emb, cache_dir=tmp_path, embed_batch_size=PART)
    assert not index.cache_path().exists() and len(list(_parts_dir(index.cache_path()).glob("*.npy"))) == 2
    fake.set_embedding_fault(None)
    before = fake.calls("/embeddings")
    built = np.array(index.embeddings)
    assert fake.calls("/embeddings") - before == (N - 100) // BATCH  # the 2 parts kept are not asked again
    assert np.array_equal(built, _one_go(kg, emb))
    assert not _parts_dir(index.cache_path()).exists()


def test_a_failure_with_parts_in_flight_keeps_the_parts_that_finished(fake, tmp_path):
    """Concurrent parts: the endpoint refuses from the start; nothing is kept, and the error names the endpoint."""
    fake.set_embedding_fault(Fault(status=400))
    index = GraphIndex(_graph(), _embedder(fake, concurrency=4), cache_dir=tmp_path, embed_batch_size=PART)
    with pytest.raises(EmbeddingError, match=rf"stopped \(0 of {N} entities.*{fake.base_url}"):
        index.warm()
    assert not index.cache_path().exists()


def test_one_build_per_cache_file_in_a_process(fake, tmp_path):
    """A flow building an index ahead and a batch task asking for the same one: one of them embeds."""
    kg = _graph()
    emb = _embedder(fake, concurrency=4)
    before = fake.calls("/embeddings")
    got: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: got.append(np.array(
        GraphIndex(kg, emb, cache_dir=tmp_path, embed_batch_size=PART).embeddings))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fake.calls("/embeddings") - before == N // BATCH
    assert len(got) == 3 and all(np.array_equal(g, got[0]) for g in got)


def test_the_cache_key_changes_with_snapshot_and_embedder(fake, tmp_path):
    def path(kg, **kw):
        return GraphIndex(kg, _embedder(fake, **kw), cache_dir=tmp_path).cache_path()

    base = path(_graph("snap-a"))
    assert base == path(_graph("snap-a"))
    assert base != path(_graph("snap-b"))  # another snapshot
    assert base != path(_graph("snap-a"), model="other-embed")  # another embedder
    assert base != path(_graph("snap-a"), dim=32)  # another dimension
    assert base != path(_graph("snap-a", n=N - 1))  # other texts under the same snapshot id
    assert path(_graph(None)).name.startswith("cs-adhoc__")


def test_the_fakes_embeddings_latency_is_its_own(tmp_path):
    with FakeOpenAI(embedding_dim=16, default_fault=Fault(latency_s=0.0),
                    embedding_fault=Fault(latency_s=0.3)) as slow:
        import time

        emb = _embedder(slow)
        started = time.perf_counter()
        emb.embed(["a"])
        assert time.perf_counter() - started >= 0.3
        assert slow.requests[-1].delay_s == pytest.approx(0.3)


def test_distill_stops_on_a_failing_embeddings_endpoint_and_resumes_where_it_stopped(
        prefect_harness, fake_llm, tmp_path, monkeypatch):
    """The flow's index build (ahead of the batches, then the batch's own) fails mid-index: the run stops with the
    endpoint's one line and writes no tool trajectory; the next run embeds only the parts not kept, and finishes."""
    import tasks.env.index as index_mod
    from flows.distill import distill_trajectories, load_trajectories
    from schemas.config import load_settings
    from tests.test_trajectories import build_warehouse, teacher
    from warehouse.db import Warehouse

    monkeypatch.setattr(index_mod, "INDEX_PART_ROWS", 2)  # a few entities: parts of two, one request each
    role = {"base_url": fake_llm.base_url, "model": "fake-model", "max_retries": 0, "timeout_s": 10}
    settings = load_settings(data_dir=tmp_path, roles={"teacher": role},
                             embeddings={"base_url": fake_llm.base_url, "model": "fake-embed", "dim": 16,
                                         "batch_size": 2, "max_concurrency": 1})
    qas = build_warehouse(settings)
    fake_llm.add(reply=teacher({q.question: q.path for q in qas}))
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        entities = int(wh.scalar("SELECT count(*) FROM entities WHERE domain = 'cs'"))
    parts = -(-entities // 2)
    real = OpenAIEmbedder.embed
    sent: list[int] = []

    def refuse_after_two(self, texts):
        if len(sent) == 2:
            fake_llm.set_embedding_fault(Fault(status=400))
        out = real(self, texts)
        sent.append(len(texts))
        return out

    monkeypatch.setattr(OpenAIEmbedder, "embed", refuse_after_two)
    with pytest.raises(EmbeddingError) as err:
        distill_trajectories(domains=["cs"], kinds=["template", "rollouts"], n_rollouts=1, settings=settings)
    assert "\n" not in str(err.value) and f"4 of {entities} entities embedded and kept" in str(err.value)
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        assert load_trajectories(wh) == []

    fake_llm.set_embedding_fault(None)
    monkeypatch.setattr(OpenAIEmbedder, "embed", real)
    before = fake_llm.calls("/embeddings")
    out = distill_trajectories(domains=["cs"], kinds=["template", "rollouts"], n_rollouts=1, settings=settings)
    index_requests = parts - 2  # the two parts kept are not asked again; rollouts may embed queries on top
    assert out["made"] == 4
    assert fake_llm.calls("/embeddings") - before >= index_requests
    texts = [t for r in fake_llm.requests[before:] if r.path.endswith("/embeddings") for t in r.json["input"]]
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        first_four = [entity_text(r["name"], r["description"]) for r in wh.query(
            "SELECT name, description FROM entities WHERE domain = 'cs' ORDER BY name LIMIT 4")]
    assert not set(first_four) & set(texts)  # the rows kept were not embedded again
