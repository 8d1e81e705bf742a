"""Teacher rollouts and long chain of thought on IKG views (Graph-RFT's incomplete-graph setting).

The complete-graph kinds (``tasks.distill.rollout``, ``tasks.distill.cot``) run here against one question's view
(``tasks.env.ikg.viewed_environment``) with the text tool offered next to the KG tools, so the data shows the
switch Graph-RFT trains: a KG tool says it has no information, the agent searches the text, reads the fact, and
goes on in the graph.

``rollouts``
    The agent loop with the teacher on the view, with the tools of the IKG template (``IKG_TEMPLATE_TOOLS``:
    ``web_search`` included), judged by the same rules as a complete-graph rollout (``judge_rollout``, the tool
    argument and thought gates), and then by one more: a correct answer is kept only when the run read a hidden
    fact in the text (a ``web_search`` reply whose passage is the chunk the fact was extracted from or, for a fact
    without provenance, a passage naming both of its entities) or reached the answer by another path in the
    view (a graph walk's reply lists the answer). Otherwise the teacher answered from what it knew, not from what
    it was shown: ``hidden_fact_not_fetched``.

``cot``
    The single-pass long CoT of Explore-on-Graph over what the view shows: the subgraph's visible triples (the
    hidden ones are not in the view) plus the passages the text tool returns for the hidden facts' queries. Judged
    like a complete-graph CoT (answer set, path coverage of the whole gold path, gates), and kept only when the
    reasoning states a hidden fact that the passages hold, its subject, relation and object
    (``triple_mentioned``; ``hidden_fact_not_fetched`` otherwise).

Teacher trajectories are off unless ``[ikg] teacher`` names kinds, and, as in ``flows.distill``, a teacher whose
thoughts the template writer writes (``[quality] thought_writer``, ``auto`` with the embedded demo-quality model)
is not asked: each variant then gets its template trajectory (``tasks.distill.ikg_template``) alone. A variant's
exported trajectory (``IKGItem.trajectory``) is its first accepted teacher trajectory (rollouts by sample, then
CoT), else its template one; every teacher trajectory's verdict is counted in the run's lines.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gateway.client import LLMGateway
from gateway.loop import run_shared
from schemas.answers import flat_text, triple_mentioned
from schemas.config import Settings
from schemas.qa import QA, PathEdge
from schemas.tools import TEXT_TOOLS, AgentRun
from schemas.trajectories import Trajectory, TrajectoryRejectReason, make_trajectory_id
from tasks.distill.ikg_template import IKG_TEMPLATE_TOOLS, ikg_template_trajectory, passages_stating
from tasks.distill.common import DistillConfig, GoldChoice, LoopSafeTools, best_path_coverage
from tasks.distill.cot import cot_format_problem, cot_subgraph, judge_cot
from tasks.distill.rollout import judge_rollout, rollout_gate_problem, rollout_messages, rollout_seed
from tasks.distill.template import lists_entity
from tasks.env.agent_loop import AgentConfig, ToolRunner, run_agent
from tasks.env.ikg import HiddenFact, IKGBuild, IKGVariant, IKGView, ViewedGraph, level_name, viewed_environment
from tasks.env.tool_calls import extract_answer, parse_answer_list
from tasks.export.datasets import IKGItem
from tasks.graph.kg import KnowledgeGraph
from tasks.qa.text_gates import thought_problem

#: The teacher kinds that run in a view, in the order a variant prefers them.
IKG_TEACHER_KINDS: tuple[str, ...] = ("rollouts", "cot")

#: Graph walks: a reply of one of these that lists the answer reached it in the view.
WALK_TOOLS: tuple[str, ...] = ("node_info", "neighbor_search", "relation_search")

_ENTRY = re.compile(r"^\d+\. ")
_CHUNK = re.compile(r"\[([^\[\]\s]+)\]: ")

Fetch = Literal["text", "path"]


# -- what a run read -------------------------------------------------------------------------------------------------


def fetched_facts(observation: str, facts: Sequence[HiddenFact]) -> list[HiddenFact]:
    """The hidden ``facts`` a text-search reply (``render_text_hits``) holds, in ``facts`` order: one of its
    passages is a chunk a fact was extracted from (``[chunk id]`` in the passage's line, the rule of
    ``tasks.env.ikg.fact_found``), or, for a fact without provenance, the passage's shown text names both of the
    fact's entities (``passages_stating``: not the title, not what the reply cut off)."""
    chunks = {m.group(1) for line in observation.split("\n") if _ENTRY.match(line) and (m := _CHUNK.search(line))}
    return [f for f in facts if (chunks & set(f.source_chunk_ids) if f.source_chunk_ids
                                 else passages_stating(observation, f.head, f.tail))]


def run_fetch(run: AgentRun, qa: QA, view: IKGView) -> tuple[Fetch | None, str]:
    """How a run got past the view's hidden facts: ``"text"`` (a text search returned one), ``"path"`` (a graph
    walk from an entity the question or an earlier reply showed lists the answer, so the view still leads
    there), or ``None`` with the reason. A walk from an entity nothing showed is the teacher's own knowledge of
    the hidden fact, which the view was made to take away."""
    for r in run.tool_calls:
        if r.ok and r.name in TEXT_TOOLS:
            read = fetched_facts(r.observation, view.facts)
            if read:
                return "text", f"round {r.round}: {r.name} returned the hidden fact {read[0].triple}"
    shown = flat_text(qa.question) + "\n" + flat_text(qa.path[0])
    for r in run.tool_calls:
        at = str(r.arguments.get("node_name") or r.arguments.get("entity") or "")
        grounded = bool(at) and flat_text(at) in shown  # a walk from a name the run was shown, not one it knew
        if r.ok and r.name in WALK_TOOLS and grounded and lists_entity(r.observation, qa.answer):
            return "path", f"round {r.round}: {r.name}({at!r}) listed the answer in the view"
        shown += "\n" + flat_text(r.observation)
    searched = sum(r.name in TEXT_TOOLS for r in run.tool_calls)
    return None, (f"answered {qa.answer!r} without reading a hidden fact in the text ({searched} text search(es)) "
                  "and without a graph walk in the view that lists the answer")


def judge_ikg_rollout(
    run: AgentRun, qa: QA, view: IKGView, *, allow_extra: bool = False
) -> tuple[TrajectoryRejectReason | None, str]:
    """``(None, how)`` when the rollout is kept, else ``(reason, detail)``: the complete-graph rules
    (``judge_rollout``) first, then the view's (``run_fetch``)."""
    reason, detail = judge_rollout(run, qa.answer, allow_extra=allow_extra)
    if reason is not None:
        return reason, detail
    how, detail = run_fetch(run, qa, view)
    if how is None:
        return "hidden_fact_not_fetched", detail
    return None, detail


# -- one trajectory --------------------------------------------------------------------------------------------------


@dataclass
class IKGTeacher:
    """What the view's teacher trajectories need: the gateway, the config (``DistillConfig``: roles, limits,
    gates), and provenance."""

    gateway: LLMGateway
    cfg: DistillConfig = field(default_factory=DistillConfig)
    run_id: str | None = None
    model: str | None = None


def _question_choice(qa: QA, edges: Sequence[PathEdge] | None = None) -> GoldChoice:
    return GoldChoice(tuple(qa.path), tuple(e.triple() for e in (qa.path_edges if edges is None else edges)),
                      "question_path")


def _base(variant: IKGVariant, kind: str, sample: int, t: IKGTeacher, tools: Sequence[str]) -> dict[str, Any]:
    qa = variant.qa
    return dict(trajectory_id=make_trajectory_id(variant.view.view_id, kind, sample), qa_id=qa.qa_id, kind=kind,
                sample=sample, domain=qa.domain, snapshot_id=qa.snapshot_id, split=qa.split, question=qa.question,
                golden_answer=qa.answer, run_id=t.run_id, model=t.model, tools=list(tools),
                gold_path=list(qa.path), gold_source="question_path")  # fmt: skip


def ikg_agent_config(cfg: DistillConfig, params: dict[str, Any]) -> AgentConfig:
    """The agent loop of an IKG rollout: the complete-graph rollout's limits, with the IKG tools."""
    return AgentConfig(role=cfg.role, style=cfg.rollout_style, tools=IKG_TEMPLATE_TOOLS, max_rounds=cfg.max_rounds,
                       max_tokens_per_round=cfg.max_tokens_per_round, params=params)  # fmt: skip


async def ikg_rollout(variant: IKGVariant, env: ToolRunner, t: IKGTeacher, sample: int = 0) -> Trajectory:
    """One teacher rollout of ``variant`` on its view's environment ``env`` (module docstring); never raises for
    model or endpoint problems."""
    qa, view, cfg = variant.qa, variant.view, t.cfg
    params = {"temperature": cfg.rollout_temperature, "seed": rollout_seed(cfg.seed, view.view_id, sample)}
    run = await run_agent(t.gateway, LoopSafeTools(env), qa.question, qa.domain, ikg_agent_config(cfg, params))
    reason, detail = judge_ikg_rollout(run, qa, view, allow_extra=cfg.allow_extra_answers)
    messages, reasoning = rollout_messages(run)
    think = "\n".join(r for r in reasoning if r)
    fields = dict(messages=messages, reasoning=reasoning, final_answer=run.final_answer, n_rounds=run.rounds,
                  repeated_calls=run.repeated_calls, end_reason=run.end_reason, params=params,
                  prompt_tokens=run.tokens.prompt, completion_tokens=run.tokens.completion,
                  path_coverage=best_path_coverage(think, [_question_choice(qa)]))  # fmt: skip
    base = _base(variant, "rollouts", sample, t, IKG_TEMPLATE_TOOLS)
    if reason is None:
        found = rollout_gate_problem(messages, reasoning, qa, cfg.language)
        if found is not None:
            reason, detail = found
    if reason is not None:
        return Trajectory(**base, status="rejected", reject_reason=reason, detail=detail, **fields)
    return Trajectory(**base, status="accepted", detail=detail, **fields)


#: The student's instructions in an IKG CoT sample.
IKG_COT_SYSTEM = (
    "Answer the question using the knowledge-graph triples and the text passages you are given. The graph may "
    "lack a fact the question needs; the passages come from a text search and may state it. Begin at the start "
    "entity and follow the triples step by step; where no triple leads on, read the passages. Think inside "
    "<think> and </think>, naming the entities and relations you use and saying which fact you read in the text. "
    "Then give the answer entities as a JSON list inside <answer> and </answer>, for example "
    "<answer>[\"Entity\"]</answer>, writing each name exactly as the triples or passages do."
)

_IKG_COT_TEACHER_SYSTEM = (
    "You write training examples of careful reasoning over an incomplete knowledge graph and a text collection. "
    "Each example has a question, the entity to start from, the correct answer, a set of (subject, relation, "
    "object) triples, some relevant and some not, and passages from a text search. A fact the question needs is "
    "missing from the triples and is stated in a passage. Write the reasoning a strong solver would produce "
    "without knowing the answer in advance: start from the start entity, quote each triple you use as written, "
    "notice where the triples do not lead on, read the missing fact in the passages and state it as a (subject, "
    "relation, object) triple, and reach the answer."
)


def ikg_cot_context(question: str, start: str, triples: Sequence[tuple[str, str, str]],
                    passages: Sequence[str]) -> str:
    """The user message of an IKG CoT sample: question, start entity, the view's triples, the passages."""
    lines = "\n".join(f"({s}, {r}, {o})" for s, r, o in triples)
    return (f"Question: {question}\nStart entity: {start}\nTriples:\n{lines}\n"
            "Text passages:\n" + "\n\n".join(passages))


def ikg_cot_material(
    variant: IKGVariant, graph: KnowledgeGraph, env: ToolRunner, cfg: DistillConfig
) -> tuple[list[tuple[str, str, str]], list[str], list[HiddenFact]]:
    """What an IKG CoT sample shows: the visible subgraph (the question's visible triples and distractors from
    the view, ``cot_subgraph`` over ``ViewedGraph``), the text tool's replies for the hidden facts' queries, and
    the hidden facts those replies hold."""
    qa, view = variant.qa, variant.view
    visible = [e for e in qa.path_edges if frozenset((e.head, e.tail)) not in view.pairs]
    triples = cot_subgraph(ViewedGraph(graph, view), [_question_choice(qa, visible)],  # type: ignore[arg-type]
                           view.view_id, max_distractors=cfg.max_distractors, seed=cfg.seed)  # fmt: skip
    passages: list[str] = []
    for f in view.facts:
        obs = env.call("web_search", {"query": f.query(), "graph_type": qa.domain})
        if obs.ok and obs.text not in passages:
            passages.append(obs.text)
    read = [f for f in view.facts if any(fetched_facts(p, [f]) for p in passages)]
    return triples, passages, read


async def ikg_cot(variant: IKGVariant, graph: KnowledgeGraph, env: ToolRunner, t: IKGTeacher) -> Trajectory:
    """One long-CoT trajectory of ``variant`` over what its view shows (module docstring)."""
    qa, cfg = variant.qa, t.cfg
    base = _base(variant, "cot", 0, t, ())
    triples, passages, read = await asyncio.to_thread(ikg_cot_material, variant, graph, LoopSafeTools(env), cfg)
    context = ikg_cot_context(qa.question, qa.path[0], triples, passages)
    student = [{"role": "system", "content": IKG_COT_SYSTEM}, {"role": "user", "content": context}]
    teacher = [{"role": "system", "content": _IKG_COT_TEACHER_SYSTEM}, {"role": "user", "content": (
        context + f"\nCorrect answer: {json.dumps([qa.answer], ensure_ascii=False)}\n\n"
        "Reply in exactly this form:\n<think>\nyour step-by-step reasoning, from the start entity to the answer\n"
        "</think>\n<answer>[\"answer entity\"]</answer>\n"
        "The answer list must hold the correct answer exactly as written above. Do not say that the answer was "
        "given to you.")}]  # fmt: skip
    params = {"max_tokens": cfg.cot_max_tokens}
    result = await t.gateway.chat(cfg.role, teacher, params=params, validate=cot_format_problem)
    common = dict(params=params, prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens)
    failure = result.failure
    if failure is not None and failure.kind != "validation":
        end = "error" if failure.kind != "truncated" else "invalid_output"
        return Trajectory(**base, status="rejected", reject_reason="llm_error", detail=failure.message,
                          messages=student, end_reason=end, **common)
    reason, detail, coverage = judge_cot(result.text, result.reasoning, [qa.answer], [_question_choice(qa)],
                                         cfg.min_path_coverage)  # fmt: skip
    think = result.reasoning or ""
    if reason is None:
        names = list(dict.fromkeys(n for tr in triples for n in (tr[0], tr[2])))
        found = thought_problem(result.reasoning or "", language=cfg.language, names=names)
        if found is not None and found[0] in ("thought_repetitive", "thought_wrong_language"):
            reason, detail = found[0], f"the reasoning: {found[1]}"  # type: ignore[assignment]
    if reason is None and not any(triple_mentioned(think, f.triple) for f in read):
        reason = "hidden_fact_not_fetched"
        detail = ("the passages hold no hidden fact" if not read else
                  f"the reasoning does not use the fact the passages give, {read[0].triple}")
    answer = extract_answer(result.text)
    items = [qa.answer] if reason is None else parse_answer_list(answer)
    final = f"<answer>{json.dumps(items, ensure_ascii=False)}</answer>" if answer is not None else result.text
    fields = dict(messages=[*student, {"role": "assistant", "content": final}], reasoning=[result.reasoning],
                  final_answer=answer, path_coverage=coverage, **common)
    if reason is not None:
        return Trajectory(**base, status="rejected", reject_reason=reason, detail=detail, **fields)
    return Trajectory(**base, status="accepted", end_reason="answer", **fields)


# -- a domain's variants ---------------------------------------------------------------------------------------------


def ikg_teacher_kinds(settings: Settings) -> tuple[tuple[str, ...], str | None]:
    """The teacher kinds to run in the views, and a line for the run when some were asked for but the teacher is
    not (its thoughts are the template writer's, ``flows.distill``'s rule)."""
    wanted = tuple(k for k in IKG_TEACHER_KINDS if k in settings.ikg.teacher)
    if not wanted:
        return (), None
    q = settings.quality
    if q.writer_for(q.thought_writer, settings.endpoint("teacher").is_local) == "template":
        return (), ("IKG teacher trajectories: not run, the teacher's thoughts are the template writer's ([quality] "
                    "thought_writer; `auto` with the embedded model), so each variant gets its template trajectory")
    return wanted, None


async def teacher_trajectories(
    variants: Sequence[IKGVariant], env: Any, graph: KnowledgeGraph, t: IKGTeacher, kinds: Sequence[str]
) -> list[list[Trajectory]]:
    """Every teacher trajectory of each variant (rollouts by sample, then CoT), concurrently (the gateway's
    limiter paces the teacher); ``env`` is the complete-graph environment the views are made from."""

    async def one(v: IKGVariant) -> list[Trajectory]:
        seen = viewed_environment(env, v.view, graph.domain)
        jobs = [ikg_rollout(v, seen, t, s) for s in range(t.cfg.n_rollouts)] if "rollouts" in kinds else []
        if "cot" in kinds:
            jobs.append(ikg_cot(v, graph, seen, t))
        return list(await asyncio.gather(*jobs))

    return list(await t.gateway.gather(one(v) for v in variants))


def teacher_lines(domain: str, made: Sequence[tuple[IKGVariant, Sequence[Trajectory]]]) -> list[str]:
    """One line per level and kind: teacher trajectories accepted of made, rejected by reason."""
    lines = []
    groups: dict[tuple[float, str], list[Trajectory]] = {}
    for v, trajs in made:
        for tr in trajs:
            groups.setdefault((v.view.level, tr.kind), []).append(tr)
    for (level, kind), trajs in sorted(groups.items()):
        ok = sum(tr.accepted for tr in trajs)
        bad = Counter(tr.reject_reason for tr in trajs if not tr.accepted)
        line = f"IKG {domain} {level_name(level)} teacher {kind}: {ok}/{len(trajs)} accepted"
        if bad:
            line += " (rejected: " + ", ".join(f"{k} {n}" for k, n in sorted(bad.items(), key=str)) + ")"
        lines.append(line)
    return lines


def summary_lines(build: IKGBuild, trajectories: Sequence[IKGItem]) -> list[str]:
    """One line per level the variants were built at (``build.levels``): variants kept (and how each stays
    answerable), rejected by reason, exported trajectories by kind (template, or the teacher's) and rejected by
    reason."""
    lines = []
    for level in build.levels:
        kept = [v for v in build.variants if v.view.level == level]
        rejects = Counter(r.reason for r in build.rejects if r.level == level)
        how = Counter(v.answerable_by for v in kept)
        trajs = [i.trajectory for i in trajectories if i.view.level == level and i.trajectory is not None]
        bad = Counter(t.reject_reason for t in trajs if t.status != "accepted")
        line = (f"IKG {build.domain} {level_name(level)}: {len(kept)} variants kept ({how['text']} by text, "
                f"{how['path']} by another path), {sum(rejects.values())} rejected")
        if rejects:
            line += " (" + ", ".join(f"{k} {n}" for k, n in sorted(rejects.items())) + ")"
        kinds = Counter(t.kind for t in trajs if t.status == "accepted")
        if set(kinds) <= {"template"}:
            line += f"; {kinds['template']} template trajectories"
        else:  # [ikg] teacher: the exported trajectory is the teacher's where one was accepted
            by_kind = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
            line += f"; {sum(kinds.values())} trajectories ({by_kind})"
        if bad:
            line += " (rejected: " + ", ".join(f"{k} {n}" for k, n in sorted(bad.items(), key=str)) + ")"
        lines.append(line)
    return lines


@dataclass
class IKGTrajectories:
    """The variants to export, each with its trajectory, and the run's lines about the teacher's."""

    items: list[IKGItem] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def pick(template: Trajectory, teacher: Sequence[Trajectory]) -> Trajectory:
    """A variant's exported trajectory: its first accepted teacher trajectory, else its template one."""
    return next((tr for tr in teacher if tr.accepted), template)


def ikg_trajectories(
    variants: Sequence[IKGVariant],
    env: Any,
    graph: KnowledgeGraph,
    settings: Settings,
    *,
    run_id: str | None = None,
    gateway: LLMGateway | None = None,
) -> IKGTrajectories:
    """The trajectories of one domain's kept variants (module docstring): the template one of each, and the
    teacher's in the view when ``[ikg] teacher`` asks for them and the teacher writes its own thoughts. ``env``
    (a ``ToolEnvironment`` over ``graph`` offering ``IKG_TEMPLATE_TOOLS``) is seen through each variant's view.
    A ``gateway`` given is used and left open; otherwise one is opened on ``settings`` and closed."""
    domain = graph.domain
    templates = [ikg_template_trajectory(v.qa, v.view, viewed_environment(env, v.view, domain), run_id=run_id)
                 for v in variants]  # fmt: skip
    kinds, note = ikg_teacher_kinds(settings)
    out = IKGTrajectories(lines=[note] if note else [])
    if not kinds or not variants:
        out.items = [IKGItem(v.qa, v.view, tr) for v, tr in zip(variants, templates)]
        return out
    q = settings.quality
    cfg = DistillConfig(n_rollouts=settings.ikg.n_rollouts, seed=settings.seed, language=q.language)
    own = gateway is None
    gw = gateway or LLMGateway(settings)
    t = IKGTeacher(gw, cfg, run_id=run_id, model=settings.endpoint("teacher").model)

    async def go() -> list[list[Trajectory]]:
        try:
            return await teacher_trajectories(variants, env, graph, t, kinds)
        finally:
            if own:
                await gw.aclose()

    made = run_shared(go())
    out.items = [IKGItem(v.qa, v.view, pick(tmpl, trajs)) for v, tmpl, trajs in zip(variants, templates, made)]
    out.lines += teacher_lines(domain, list(zip(variants, made)))
    return out


__all__ = [
    "IKG_COT_SYSTEM",
    "IKG_TEACHER_KINDS",
    "IKGTeacher",
    "IKGTrajectories",
    "WALK_TOOLS",
    "fetched_facts",
    "ikg_agent_config",
    "ikg_cot",
    "ikg_cot_context",
    "ikg_cot_material",
    "ikg_rollout",
    "ikg_teacher_kinds",
    "ikg_trajectories",
    "judge_ikg_rollout",
    "pick",
    "run_fetch",
    "summary_lines",
    "teacher_lines",
    "teacher_trajectories",
]
