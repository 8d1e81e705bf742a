"""IKG variants for an export (Graph-RFT's incomplete-graph setting): the flows' side of ``tasks.env.ikg``.

For the questions an export holds and the levels of ``[ikg] levels``, each domain's questions get their views
(``build_variants``) over the graph snapshot they were generated on, checked against the domain's corpus chunks
(``warehouse.text_chunks``) searched with the text tool, and each kept variant gets its template trajectory
(``tasks.distill.ikg_template``) run on the view. A domain with no corpus (an imported graph) gets none, and the
run says so in one line. ``flows.export`` and ``flows.refresh`` print the lines and pass the items to the
export (``tasks.export.datasets.ExportInputs.ikg``).

The text index and the entity index use ``[ikg] embedder`` (the configured embedder, or the hashing one): serve
the tools with the same one (``hopforge serve-tools --embedder``) so a rollout reads what the check read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from gateway.embeddings import Embedder, shared_embedder
from schemas.config import Settings
from schemas.qa import QA, SPLITS
from tasks.distill.ikg_template import IKG_TEMPLATE_TOOLS, ikg_template_trajectory
from tasks.env.ikg import IKGBuild, build_variants, level_name, viewed_environment
from tasks.env.index import HashingEmbedder
from tasks.env.text_search import TextIndex, cached_text_index
from tasks.env.tools import ToolEnvironment
from tasks.export.datasets import IKGItem
from warehouse.db import Warehouse
from warehouse.graphs import SnapshotNotFoundError, load_graph
from warehouse.text_chunks import domain_chunks


@dataclass
class IKGData:
    """The variants to export and what the run prints about them (kept and rejected per level, with reasons)."""

    items: list[IKGItem] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def ikg_embedder(settings: Settings) -> Embedder:
    return HashingEmbedder() if settings.ikg.embedder == "hashing" else shared_embedder(settings.embeddings)


def domain_text_index(wh: Warehouse, domain: str, embedder: Embedder, settings: Settings) -> TextIndex | None:
    """The text search over ``domain``'s corpus chunks (cached per process and on disk), or ``None`` without any."""
    chunks = domain_chunks(wh, domain)
    if not chunks:
        return None
    return cached_text_index(chunks, embedder, name=domain, cache_dir=settings.data_dir / "indexes")


def summary_lines(build: IKGBuild, levels: Sequence[float], trajectories: Sequence[IKGItem]) -> list[str]:
    """One line per level: variants kept (and how each stays answerable), rejected by reason, template
    trajectories made and rejected by reason."""
    lines = []
    for level in levels:
        kept = [v for v in build.variants if v.view.level == level]
        rejects = Counter(r.reason for r in build.rejects if r.level == level)
        how = Counter(v.answerable_by for v in kept)
        trajs = [i.trajectory for i in trajectories if i.view.level == level and i.trajectory is not None]
        bad = Counter(t.reject_reason for t in trajs if t.status != "accepted")
        line = (f"IKG {build.domain} {level_name(level)}: {len(kept)} variants kept ({how['text']} by text, "
                f"{how['path']} by another path), {sum(rejects.values())} rejected")
        if rejects:
            line += " (" + ", ".join(f"{k} {n}" for k, n in sorted(rejects.items())) + ")"
        line += f"; {sum(t.status == 'accepted' for t in trajs)} template trajectories"
        if bad:
            line += " (rejected: " + ", ".join(f"{k} {n}" for k, n in sorted(bad.items(), key=str)) + ")"
        lines.append(line)
    return lines


def ikg_export_data(wh: Warehouse, qas: Sequence[QA], settings: Settings, *, run_id: str | None = None) -> IKGData:
    """The IKG variants of ``qas`` (those with a split) at ``settings.ikg.levels`` (module docstring); nothing when
    no level is configured."""
    levels = tuple(settings.ikg.levels)
    out = IKGData()
    if not levels:
        return out
    groups: dict[tuple[str, str | None], list[QA]] = {}
    for q in qas:
        if q.split in SPLITS:
            groups.setdefault((q.domain, q.snapshot_id), []).append(q)
    embedder = ikg_embedder(settings)
    for (domain, snapshot_id), questions in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        try:
            graph = load_graph(wh, domain, snapshot_id)
        except SnapshotNotFoundError:
            out.lines.append(f"IKG {domain}: graph snapshot {snapshot_id} is not in the warehouse, so its "
                             f"{len(questions)} questions get no IKG variants")  # fmt: skip
            continue
        text = domain_text_index(wh, domain, embedder, settings)
        build = build_variants(graph, sorted(questions, key=lambda q: q.qa_id), text, levels=levels,
                               k=settings.ikg.top_k)  # fmt: skip
        if build.notice is not None:
            out.lines.append(f"IKG {build.notice}")
            continue
        env = ToolEnvironment.from_graphs([graph], embedder, cache_dir=settings.data_dir / "indexes",
                                          tools=IKG_TEMPLATE_TOOLS, texts={domain: text})  # fmt: skip
        made = [IKGItem(v.qa, v.view, ikg_template_trajectory(v.qa, v.view, viewed_environment(env, v.view, domain),
                                                              run_id=run_id))
                for v in build.variants]  # fmt: skip
        out.items += made
        out.lines += summary_lines(build, levels, made)
    return out


__all__ = ["IKGData", "domain_text_index", "ikg_embedder", "ikg_export_data", "summary_lines"]
