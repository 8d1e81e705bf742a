"""Relation profiles for runs that measure mechanics (sampling, throughput, retries, resumes, outages), not meaning:
every relation label of a graph is taken to name one thing in each direction, as a user's profiles file could say.
Without them the shipped lexicon refuses most hops of generated and demo graphs ("part of", "member of" name many
things), so walks find no paths and generation jobs end before their first call. Benchmarks and tests share this
module; tests of what questions mean use the shipped lexicon instead."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from schemas.meaning import relation_key
from tasks.meaning.profiles import ProfileBook, edge_label, label_stats

ONE_EACH_WAY = {"objects_per_subject": "one", "subjects_per_object": "one"}


def one_each_way(relations: Iterable[Any]) -> dict[str, dict[str, str]]:
    """User profile entries giving every label of ``relations`` a count of one both ways."""
    keys = set()
    for r in relations:
        text, _ = edge_label(r, r.source, r.target)
        if text:
            keys.add(relation_key(text))
    return {k: dict(ONE_EACH_WAY) for k in sorted(keys)}


def permissive_book(kg) -> ProfileBook:
    """A profile book over ``kg`` in which every relation can be asked either way (forms still from the lexicon)."""
    rels = kg.relations()
    return ProfileBook(user=one_each_way(rels), stats=label_stats(rels))


def store_one_each_way(wh, kgs, run_id: str = "test-profiles") -> None:
    """Store ``one_each_way`` entries for the graphs' labels as the user's profiles in warehouse ``wh``."""
    from warehouse.profiles import write_user_profiles

    entries: dict[str, dict[str, str]] = {}
    for kg in kgs:
        entries.update(one_each_way(kg.relations()))
    write_user_profiles(wh, entries, {k: k for k in entries}, run_id=run_id)
