"""Entity resolution: merge names that are spelling variants of one another; report near duplicates.

**What is merged.** Two entities merge when their names differ only by case, whitespace, punctuation (quotes,
dashes, hyphens, underscores, punctuation at the ends or between words) or a plural ending on the last word:
"Neural network", "neural networks" and "Neural-Network" are one entity. ``resolution_key`` is that
equivalence; ``merge_rule`` names the weakest difference between two names (``case`` < ``whitespace`` <
``punctuation`` < ``plural``) and goes into the log. Anything looser (synonyms, abbreviations, "NN") is only
*reported* by ``near_duplicates`` for a person to review.

**Which name is kept.** Within a group, names are ranked by, in order:
1. mentions: number of source chunks (the name the corpus uses most),
2. degree: number of relations touching it (the best-connected spelling),
3. description length (the best-described spelling),
4. code-point order of the name (a fixed tie-break, so the choice never depends on input order).
The first-ranked name is kept.

**How records merge.** The kept entity takes the first real type in rank order, the descriptions of the group
joined (``graph_store.join_descriptions``, rank order), and the union of chunk ids and file paths. Relations are
rewired to the kept name; relations that become identical facts are folded with weights *summed* (separate
evidence for one fact, as LightRAG does); a relation between two merged spellings would become a self-loop and
is dropped, and returned in ``dropped_self_loops`` so nothing disappears unseen.

**Review and undo.** Every merge is an ``EntityMerge`` record (kept name, merged name, rule, run, pre-merge
snapshot). Resolution never edits a snapshot: the flow writes the merged records as a new snapshot and the
pre-merge snapshot stays in the warehouse. ``undo_merges(pre_entities, pre_relations, log, undo=...)`` replays
the log on the pre-merge records minus the merges to undo; pass the undone pairs as ``keep_apart`` to later
``resolve_entities`` runs so they stay apart.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from schemas.graph import UNKNOWN_TYPE, Entity, EntityMerge, NearDuplicate, Relation
from tasks.graph.store import join_descriptions, merge_duplicate_relations
from tasks.graph.kg import normalize_name

MergeRule = Literal["case", "whitespace", "punctuation", "plural"]

# Any run of characters that are not letters or digits (inside the name) becomes one space.
_NON_WORD = re.compile(r"[^\w]+|_+", re.UNICODE)
# Endings that look plural but are not ("analysis", "status", "class", "news").
_NOT_PLURAL = ("ss", "us", "is", "news")
_MIN_STEM = 3
# An upper-case acronym with a lower-case plural "s" ("GPUs", "APIs", "LLMs"): checked on the original spelling,
# because after case folding "gpus" looks like "status".
_ACRONYM_PLURAL = re.compile(r"(?<![A-Za-z])([A-Z][A-Z0-9]+)s\W*$")


def _singular(word: str) -> str:
    """English plural -> singular for the last word of a name, conservative: only regular plurals, only words
    at least ``_MIN_STEM`` letters after the cut, never words ending like "analysis", "status", "class"."""
    if not word.isalpha() or word.endswith(_NOT_PLURAL):
        return word
    if word.endswith("ies") and len(word) - 3 >= _MIN_STEM:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")) and len(word) - 2 >= _MIN_STEM:
        return word[:-2]
    if word.endswith("s") and len(word) - 1 >= _MIN_STEM:
        return word[:-1]
    return word


def _punctuation_key(name: str) -> str:
    """``normalize_name`` plus every run of non-alphanumeric characters folded to one space."""
    base = normalize_name(name)
    # Accents stay (they tell names apart in many languages); only separators are folded.
    return " ".join(_NON_WORD.sub(" ", base).split())


def resolution_key(name: str) -> str:
    """Names with the same key are merged: case, whitespace, punctuation and a trailing plural ignored."""
    acronym = _ACRONYM_PLURAL.search(name)
    if acronym:
        return _punctuation_key(name[: acronym.end(1)])
    key = _punctuation_key(name)
    head, _, last = key.rpartition(" ")
    last = _singular(last)
    return f"{head} {last}" if head else last


def merge_rule(a: str, b: str) -> MergeRule | None:
    """The weakest normalisation under which ``a`` and ``b`` are the same name, or ``None`` if none is."""
    if a.casefold() == b.casefold():
        return "case"
    if " ".join(unicodedata.normalize("NFKC", a).casefold().split()) == " ".join(
        unicodedata.normalize("NFKC", b).casefold().split()
    ):
        return "whitespace"
    if _punctuation_key(a) == _punctuation_key(b):
        return "punctuation"
    if resolution_key(a) == resolution_key(b):
        return "plural"
    return None


@dataclass
class ResolutionResult:
    """Merged records and the log that explains them."""

    entities: list[Entity]
    relations: list[Relation]
    merges: list[EntityMerge]
    dropped_self_loops: list[Relation] = field(default_factory=list)
    relations_folded: int = 0

    def summary(self) -> str:
        return (
            f"{len(self.merges)} merges, {len(self.entities)} entities, {len(self.relations)} relations; "
            f"{self.relations_folded} relations folded, {len(self.dropped_self_loops)} self-loops dropped"
        )


def _degrees(relations: Iterable[Relation]) -> dict[str, int]:
    deg: dict[str, int] = {}
    for r in relations:
        deg[r.source] = deg.get(r.source, 0) + 1
        if r.target != r.source:
            deg[r.target] = deg.get(r.target, 0) + 1
    return deg


def _rank_key(e: Entity, degree: dict[str, int]) -> tuple[int, int, int, str]:
    return (-len(e.source_chunk_ids), -degree.get(e.name, 0), -len(e.description), e.name)


def _merge_entity(group: Sequence[Entity]) -> Entity:
    """Fold a ranked group into its first member (see the module docstring)."""
    kept = group[0]
    etype = next((e.type for e in group if e.type and e.type != UNKNOWN_TYPE), kept.type)
    return kept.model_copy(
        update={
            "type": etype,
            "description": join_descriptions(e.description for e in group),
            "source_chunk_ids": list(dict.fromkeys(c for e in group for c in e.source_chunk_ids)),
            "file_paths": list(dict.fromkeys(f for e in group for f in e.file_paths)),
        }
    )


def _apply_mapping(
    entities: Sequence[Entity], relations: Sequence[Relation], kept_of: dict[str, str], order: dict[str, int]
) -> tuple[list[Entity], list[Relation], list[Relation], int]:
    """Merge entities by ``kept_of`` (merged name -> kept name; groups ranked by ``order``) and rewire."""
    by_name = {e.name: e for e in entities}
    groups: dict[str, list[Entity]] = {}
    for e in entities:
        groups.setdefault(kept_of.get(e.name, e.name), []).append(e)
    merged_entities = []
    for kept, members in groups.items():
        members.sort(key=lambda e: (e.name != kept, order.get(e.name, 0), e.name))
        if members[0].name != kept:  # the kept name must exist in the records
            raise ValueError(f"merge target {kept!r} is not an entity")
        merged_entities.append(_merge_entity(members) if len(members) > 1 else by_name[kept])
    merged_entities.sort(key=lambda e: e.name)

    rewired: list[Relation] = []
    dropped: list[Relation] = []
    for r in relations:
        s, t = kept_of.get(r.source, r.source), kept_of.get(r.target, r.target)
        if s == r.source and t == r.target:
            rewired.append(r)
        elif s == t and r.source != r.target:
            dropped.append(r)
        else:
            rewired.append(r.model_copy(update={"source": s, "target": t}))
    folded = merge_duplicate_relations(rewired, weight="sum")
    return merged_entities, folded, dropped, len(rewired) - len(folded)


def resolve_entities(
    entities: Sequence[Entity],
    relations: Sequence[Relation],
    *,
    run_id: str | None = None,
    from_snapshot_id: str | None = None,
    same_type_only: bool = False,
    keep_apart: Iterable[tuple[str, str]] = (),
) -> ResolutionResult:
    """Merge spelling variants (``resolution_key``) and return the merged records with the merge log.

    ``same_type_only`` merges only names of the same entity type. ``keep_apart`` lists name pairs that must not
    end up merged (e.g. merges a reviewer undid): within a key group, names are placed in rank order into the
    first cluster holding no name kept apart from them. Deterministic: the result does not depend on the order
    of the input records.
    """
    entities = list(entities)
    if not entities:
        return ResolutionResult([], list(relations), [])
    domain = entities[0].domain
    apart = {frozenset(p) for p in keep_apart}
    degree = _degrees(relations)
    groups: dict[tuple[str, str], list[Entity]] = {}
    for e in entities:
        groups.setdefault((resolution_key(e.name), e.type if same_type_only else ""), []).append(e)

    kept_of: dict[str, str] = {}
    order: dict[str, int] = {}
    merges: list[EntityMerge] = []
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda e: _rank_key(e, degree))
        if len(members) < 2:
            continue
        clusters: list[list[str]] = []
        for e in members:
            home = next((c for c in clusters if not any(frozenset((e.name, o)) in apart for o in c)), None)
            if home is None:
                clusters.append([e.name])
            else:
                home.append(e.name)
        for cluster in clusters:
            kept = cluster[0]
            for rank, name in enumerate(cluster):
                order[name] = rank
                if name == kept:
                    continue
                kept_of[name] = kept
                # Names in one group share resolution_key, so merge_rule always finds a rule; "plural" (the
                # loosest) only keeps the type checker satisfied.
                rule = merge_rule(kept, name) or "plural"
                merges.append(
                    EntityMerge(
                        domain=domain, kept_name=kept, merged_name=name, rule=rule, run_id=run_id,
                        from_snapshot_id=from_snapshot_id,
                    )
                )  # fmt: skip
    merged_entities, merged_relations, dropped, folded = _apply_mapping(entities, relations, kept_of, order)
    return ResolutionResult(merged_entities, merged_relations, merges, dropped, folded)


def apply_merges(
    entities: Sequence[Entity], relations: Sequence[Relation], merges: Sequence[EntityMerge]
) -> ResolutionResult:
    """Replay a merge log on records (normally the pre-merge snapshot). Members of a group fold in log order
    after the kept name. Chains (a -> b, b -> c) resolve to the final name; a cycle or a name that is not an
    entity is a ``ValueError``."""
    names = {e.name for e in entities}
    step = {}
    for m in merges:
        for n in (m.kept_name, m.merged_name):
            if n not in names:
                raise ValueError(f"merge log names {n!r}, which is not an entity of these records")
        step[m.merged_name] = m.kept_name
    kept_of: dict[str, str] = {}
    for name in step:
        seen = {name}
        target = step[name]
        while target in step:
            if target in seen:
                raise ValueError(f"merge log has a cycle through {target!r}")
            seen.add(target)
            target = step[target]
        kept_of[name] = target
    order = {m.merged_name: i + 1 for i, m in enumerate(merges)}
    merged_entities, merged_relations, dropped, folded = _apply_mapping(entities, relations, kept_of, order)
    return ResolutionResult(merged_entities, merged_relations, list(merges), dropped, folded)


def undo_merges(
    pre_entities: Sequence[Entity],
    pre_relations: Sequence[Relation],
    merges: Sequence[EntityMerge],
    undo: Iterable[tuple[str, str]] | None = None,
) -> ResolutionResult:
    """Undo some merges (``(kept_name, merged_name)`` pairs; ``None`` = all) given the pre-merge records
    (the snapshot named by the log's ``from_snapshot_id``): the remaining log is replayed on them."""
    if undo is None:
        return ResolutionResult(list(pre_entities), list(pre_relations), [])
    drop = {tuple(p) for p in undo}
    unknown = drop - {(m.kept_name, m.merged_name) for m in merges}
    if unknown:
        raise ValueError(f"not in the merge log: {sorted(unknown)[:5]}")
    remaining = [m for m in merges if (m.kept_name, m.merged_name) not in drop]
    return apply_merges(pre_entities, pre_relations, remaining)


# -- near duplicates -----------------------------------------------------------------------------------------------
Embed = Callable[[list[str]], np.ndarray]


def near_duplicates(
    names: Iterable[str],
    embed: Embed,
    *,
    domain: str,
    threshold: float = 0.95,
    top_k: int = 10,
    block_size: int = 1024,
    embed_batch: int = 4096,
    snapshot_id: str | None = None,
    run_id: str | None = None,
) -> list[NearDuplicate]:
    """Pairs of distinct names whose embeddings have cosine >= ``threshold``: a report, nothing is merged.

    ``embed(texts) -> array (len(texts), dim)`` is called on batches of ``embed_batch`` names (sorted, unique).
    Rows are L2-normalised (all-zero rows are skipped), then compared block by block (``block_size`` rows
    against all, in float32), keeping each name's ``top_k`` best partners: memory stays at
    ``block_size x n`` floats, and 10k names take about a second. A pair is reported once, ``a < b``, with its
    cosine recomputed in float64 and rounded to 6 decimals, sorted by cosine (descending) then names.
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    if top_k < 1 or block_size < 1 or embed_batch < 1:
        raise ValueError("top_k, block_size and embed_batch must be positive")
    unique = sorted(set(names))
    if len(unique) < 2:
        return []
    chunks = []
    for i in range(0, len(unique), embed_batch):
        batch = unique[i : i + embed_batch]
        vecs = np.asarray(embed(batch), dtype=np.float64)
        if vecs.ndim != 2 or vecs.shape[0] != len(batch):
            raise ValueError(f"embed returned shape {vecs.shape} for {len(batch)} texts; expected (n, dim)")
        chunks.append(vecs)
    matrix = np.vstack(chunks)
    if not np.isfinite(matrix).all():
        raise ValueError("embed returned NaN or infinite values")
    norms = np.linalg.norm(matrix, axis=1)
    keep = np.flatnonzero(norms > 0)
    exact = matrix[keep] / norms[keep, None]
    fast = exact.astype(np.float32)
    kept_names = [unique[i] for i in keep]
    n = len(kept_names)
    k = min(top_k, n - 1)
    if k < 1:
        return []
    # Candidates come from float32 blocks (fast, but their last digits depend on the block shape); each
    # candidate's cosine is then recomputed in float64 from the two vectors alone, so the report does not
    # depend on block_size, batch sizes or input order.
    slack = 1e-4
    found: dict[tuple[str, str], float] = {}
    for start in range(0, n, block_size):
        sims = fast[start : start + block_size] @ fast.T
        rows = np.arange(sims.shape[0])
        sims[rows, start + rows] = -np.inf  # a name is not its own duplicate
        best = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        vals = np.take_along_axis(sims, best, axis=1)
        for r, c in zip(*np.nonzero(vals >= threshold - slack), strict=True):
            i, j = start + int(r), int(best[r, c])
            cosine = round(float(np.clip(exact[i] @ exact[j], -1.0, 1.0)), 6)
            if cosine < threshold:
                continue
            a, b = (kept_names[i], kept_names[j]) if kept_names[i] < kept_names[j] else (kept_names[j], kept_names[i])
            found[(a, b)] = cosine
    pairs = sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))
    return [
        NearDuplicate(domain=domain, a=a, b=b, cosine=cos, snapshot_id=snapshot_id, run_id=run_id)
        for (a, b), cos in pairs
    ]
