"""Response cache: hit/miss, modes, scopes, thread and multi-process safety."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

from gateway.cache import ResponseCache, cache_key


def key(i=0, **kw):
    return cache_key(model=kw.get("model", "m"), messages=[{"role": "user", "content": f"q{i}"}],
                     params=kw.get("params", {"temperature": 0}), schema=kw.get("schema"))


def test_key_depends_on_everything_that_changes_the_answer():
    base = key()
    assert base == key()
    assert base != key(model="other")
    assert base != key(params={"temperature": 0.5})
    assert base != key(schema={"type": "object"})
    assert base != key(1)
    # parameter order does not matter
    assert cache_key(model="m", messages=[], params={"a": 1, "b": 2}) == cache_key(model="m", messages=[], params={"b": 2, "a": 1})


def test_hit_and_miss(tmp_path):
    c = ResponseCache(tmp_path / "c.sqlite")
    assert c.get(key()) is None
    c.put(key(), {"text": "x"})
    assert c.get(key()) == {"text": "x"}
    assert len(c) == 1


def test_modes(tmp_path):
    path = tmp_path / "c.sqlite"
    ResponseCache(path).put(key(), {"text": "old"})
    assert ResponseCache(path, mode="read_only").get(key()) == {"text": "old"}
    ro = ResponseCache(path, mode="read_only")
    ro.put(key(1), {"text": "new"})
    assert ResponseCache(path).get(key(1)) is None
    refresh = ResponseCache(path, mode="refresh")
    assert refresh.get(key()) is None  # never reads
    refresh.put(key(), {"text": "fresh"})
    assert ResponseCache(path).get(key()) == {"text": "fresh"}
    off = ResponseCache(tmp_path / "never.sqlite", mode="off")
    off.put(key(), {"text": "x"})
    assert off.get(key()) is None and not (tmp_path / "never.sqlite").exists()


def test_scopes_are_separate(tmp_path):
    a = ResponseCache(tmp_path / "c.sqlite", scope="run-a")
    b = ResponseCache(tmp_path / "c.sqlite", scope="run-b")
    a.put(key(), {"text": "a"})
    assert b.get(key()) is None and a.get(key()) == {"text": "a"}


def test_many_threads(tmp_path):
    c = ResponseCache(tmp_path / "c.sqlite")
    errors = []

    def work(t):
        try:
            for i in range(50):
                c.put(key(t * 1000 + i), {"text": str(i)})
                assert c.get(key(t * 1000 + i)) == {"text": str(i)}
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert not errors and len(c) == 400


def test_two_processes_write_and_read_the_same_file(tmp_path):
    path = tmp_path / "shared.sqlite"
    code = textwrap.dedent("""
        import sys
        from gateway.cache import ResponseCache, cache_key
        c = ResponseCache(sys.argv[1])
        who = sys.argv[2]
        for i in range(200):
            k = cache_key(model="m", messages=[{"role": "user", "content": f"{who}-{i}"}], params={})
            c.put(k, {"text": f"{who}-{i}"})
            shared = cache_key(model="m", messages=[{"role": "user", "content": f"shared-{i}"}], params={})
            c.put(shared, {"text": f"shared-{i}"})
        print("done")
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), w], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in ("p1", "p2")]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    c = ResponseCache(path)
    assert len(c) == 600
    for who in ("p1", "p2", "shared"):
        k = cache_key(model="m", messages=[{"role": "user", "content": f"{who}-7"}], params={})
        assert c.get(k) == {"text": f"{who}-7"}


def test_a_broken_cache_degrades_to_misses(tmp_path):
    c = ResponseCache(tmp_path / "c.sqlite")
    c.put(key(), {"text": "x"})
    conn = c._conn()
    conn.execute("DROP TABLE responses")  # any sqlite error: the cache must not take the call down with it
    assert c.get(key()) is None
    c.put(key(1), {"text": "y"})
    assert c.errors == 2
