"""The records layer: ``Warehouse.write`` then ``Warehouse.read`` gives back equal pydantic records."""

from __future__ import annotations

import pytest

from schemas.errors import WarehouseError
from schemas.qa import QA, PathEdge
from warehouse.db import Warehouse


def _qa(qa_id: str, domain: str = "cs", split: str | None = None) -> QA:
    return QA(qa_id=qa_id, domain=domain, snapshot_id="s1", seed="King's College", hop_class="1-2",
              path=["King's College", "London"], question="Where is King's College?", answer="London",
              path_edges=[PathEdge(head="King's College", tail="London", relation="located in",
                                   keywords=["located", "city"], description="it is in London")],
              split=split, source_chunk_ids=["c1", "c2"])


def test_write_then_read_round_trips_nested_records():
    wh = Warehouse()
    records = [_qa("q2", split="test"), _qa("q1"), _qa("q3", domain="law")]
    assert wh.write("qa", records) == 3
    back = wh.read("qa", QA, order_by="qa_id")
    assert back == sorted(records, key=lambda q: q.qa_id)  # lists, nested models and quotes survive
    assert [q.qa_id for q in wh.read("qa", QA, "domain = ? AND split IS NULL", ["cs"])] == ["q1"]


def test_read_orders_by_the_first_column_by_default_and_names_unknown_tables():
    wh = Warehouse()
    wh.write("qa", [_qa("b"), _qa("a")])
    assert [q.qa_id for q in wh.read("qa", QA)] == ["a", "b"]
    with pytest.raises(WarehouseError, match="no table 'nope'"):
        wh.read("nope", QA)


def test_delete_by_key_inside_a_transaction():
    wh = Warehouse()
    wh.write("qa", [_qa("a"), _qa("b"), _qa("c")])
    with wh.transaction() as con:
        wh.delete("qa", "qa_id", ["a", "c"], con=con)
    assert [q.qa_id for q in wh.read("qa", QA)] == ["b"]
