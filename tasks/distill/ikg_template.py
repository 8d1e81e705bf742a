"""Template trajectories of IKG questions (Graph-RFT's incomplete-graph setting, ``tasks.env.ikg``).

The complete-graph template (``tasks.distill.template``, Omne-R1) walks a gold path with ``entity_matcher``
and ``node_info``. On an IKG view one or more hops of that path are hidden, so the walk shows the switch
Graph-RFT trains: at a hidden hop the agent asks the graph for the relation (``neighbor_search``), the graph
answers that it has no information, the agent searches the text (``web_search``), reads the fact in a passage,
and goes on in the graph from the entity the text named. Every observation is the real tool output of the view
(``viewed_environment``), and each must show what the next step needs, or the trajectory is rejected with the
reason, like the complete template.

The thoughts are written here, one per assistant turn, from the step alone: each names only the question's
entities and nodes an earlier output showed (``thought_problems`` re-checks it). No LLM is called, so an export
can make these trajectories itself, deterministically.
"""

from __future__ import annotations

import re
from typing import Any

from schemas.answers import name_key
from schemas.qa import QA, PathEdge
from schemas.trajectories import Trajectory, TrajectoryRejectReason, make_trajectory_id
from tasks.distill.template import ToolStep, lists_entity, template_messages, thought_problems
from tasks.env.agent_loop import AgentConfig, ToolRunner, build_system_prompt
from tasks.env.ikg import IKGView

#: The tools an IKG template trajectory uses and offers (the system prompt and the SFT ``tools`` column).
IKG_TEMPLATE_TOOLS: tuple[str, ...] = ("entity_matcher", "node_info", "neighbor_search", "web_search")

#: How the graph's reply on a hidden hop starts (``tasks.env.tools.render_no_information``).
NO_INFORMATION = "No information in the KG"


def ikg_trajectory_id(view: IKGView) -> str:
    """The template trajectory id of one IKG variant (one per question and level)."""
    return make_trajectory_id(view.view_id, "template", 0)


def _hidden(view: IKGView, edge: PathEdge) -> bool:
    return frozenset((edge.head, edge.tail)) in view.pairs


_PASSAGE = re.compile(r"^\d+\. .*?\[[^\[\]\s]+\]: (?P<text>.*)$", re.M)


def passages_stating(observation: str, a: str, b: str) -> list[str]:
    """The passages of a text-search reply (``render_text_hits``: ``"1. Title [chunk id]: text"``) whose shown text
    names both ``a`` and ``b``: the fact between them can be read there. The title does not count (a document
    titled "... the Three Sisters" does not say who grew them), nor does text the reply cut off."""
    ka, kb = name_key(a), name_key(b)
    return [m["text"] for m in _PASSAGE.finditer(observation) if ka in (t := name_key(m["text"])) and kb in t]


def _relation(edge: PathEdge) -> str:
    return " ".join(edge.relation_text().split())


def _fact(edge: PathEdge) -> str:
    """The fact in its stored direction, as a clause: "Alan Turing studied at King's College"."""
    s, _, o = edge.triple()
    return f"{s} {_relation(edge)} {o}"


def run_ikg_tools(
    env: ToolRunner, qa: QA, view: IKGView
) -> tuple[list[ToolStep], list[str], tuple[TrajectoryRejectReason, str] | None]:
    """Run the walk along ``qa``'s path on the view's environment ``env``; returns the steps, one thought per step
    (the answer's thought is added by the caller), and ``None`` or the first problem ``(reason, detail)``."""
    path, domain = qa.path, qa.domain
    steps: list[ToolStep] = []
    thoughts: list[str] = []

    def run(name: str, args: dict[str, Any], expects: str, thought: str) -> tuple[bool, str]:
        obs = env.call(name, args)
        steps.append(ToolStep(name, args, obs.text, obs.ok, expects))
        thoughts.append(thought)
        return obs.ok, obs.text

    ok, text = run("entity_matcher", {"node_name": path[0], "graph_type": domain}, path[0],
                   f"The question starts from {path[0]}, so I look it up in the graph first.")
    if not ok or not lists_entity(text, path[0]):
        return steps, thoughts, ("start_not_found", f"entity_matcher({path[0]!r}) does not list the start entity")
    pins = _pins(qa)
    read_in_text: PathEdge | None = None
    for k, (edge, here, nxt) in enumerate(zip(qa.path_edges, path, path[1:])):
        rel = _relation(edge)
        lead = (f"The text says that {_fact(read_in_text)}; I go on in the graph from {here}" if read_in_text
                else f"Next I need the {rel} relation of {here}")
        read_in_text = None
        shown: str | None = None
        if not _hidden(view, edge):
            ok, text = run("node_info", {"node_name": here, "graph_type": domain}, nxt,
                           f"{lead}, so I open {here} in the graph.")
            if not ok or not lists_entity(text, nxt):
                return steps, thoughts, ("next_hop_missing", f"node_info({here!r}) does not list the next path node {nxt!r}")
            shown = text
        else:
            ok, text = run("neighbor_search", {"entity": here, "relation": rel, "graph_type": domain}, nxt,
                           f"{lead}, so I ask the graph for it.")
            if ok or not text.startswith(NO_INFORMATION):
                return steps, thoughts, ("tool_error", f"neighbor_search({here!r}, {rel!r}) on the view did not say "
                                         "the graph has no information")
            ok, text = run("web_search", {"query": f"{here} {rel}", "graph_type": domain}, nxt,
                           f"The graph has no information about the {rel} relation of {here}, so I search the text.")
            if not ok or not passages_stating(text, here, nxt):
                return steps, thoughts, ("next_hop_missing", f"web_search({here} {rel!r}) shows no passage naming "
                                         f"both {here!r} and the next path node {nxt!r}")
            read_in_text = edge
        if k > 0 and pins.get(k):
            problem = _check_pins(run, view, domain, here, pins[k], shown)
            if problem is not None:
                return steps, thoughts, problem
    last = len(path) - 1
    if pins.get(last):
        problem = _check_pins(run, view, domain, path[last], pins[last], None)
        if problem is not None:
            return steps, thoughts, problem
    return steps, thoughts, None


def _pins(qa: QA) -> dict[int, list[tuple[str, str]]]:
    """Chain node index -> ``(label, value)`` of each pin of the question's program."""
    out: dict[int, list[tuple[str, str]]] = {}
    program = qa.program
    for c in program.constraints if program is not None and program.nodes == list(qa.path) else ():
        out.setdefault(c.node, []).append((" ".join(c.label.split()), c.value))
    return out


def _check_pins(run: Any, view: IKGView, domain: str, node: str, pins: list[tuple[str, str]],
                shown: str | None) -> tuple[TrajectoryRejectReason, str] | None:
    """Check each pin of ``node`` with the tools: a pin the view shows in ``node``'s graph reply (``shown``; opened
    when the walk has not opened it), a hidden one in the text after the graph says it has no information, as a hop
    is, except that the graph's reply may list the label's other neighbours (the view hides the fact, and the value
    is known from the question). The question states every pin, so the thoughts may name its value. ``None`` or the
    problem."""
    for label, value in pins:
        if frozenset((node, value)) in view.pairs:
            ok, text = run("neighbor_search", {"entity": node, "relation": label, "graph_type": domain}, value,
                           f"The question also ties {node} to {value} ({label}); I ask the graph to check it.")
            # The view hides this fact, not every fact of the label: the reply may list other neighbours, never it.
            if ok and lists_entity(text, value):
                return ("tool_error", f"neighbor_search({node!r}, {label!r}) on the view lists {value!r}, which the "
                        "view hides")
            ok, text = run("web_search", {"query": f"{node} {label}", "graph_type": domain}, value,
                           f"The graph does not show {value} among the {label} relations of {node}, so I check it in "
                           "the text.")
            if not ok or not passages_stating(text, node, value):
                return ("pin_missing", f"web_search({node} {label!r}) shows no passage naming both {node!r} and "
                        f"{value!r}, which the question pins it by")
            continue
        if shown is None:
            ok, shown = run("node_info", {"node_name": node, "graph_type": domain}, value,
                            f"The question also ties {node} to {value} ({label}); I open {node} to check it.")
            if not ok:
                return ("tool_error", f"node_info({node!r}) failed: {shown[:200]}")
        if not lists_entity(shown, value):
            return ("pin_missing", f"node_info({node!r}) does not list {value!r}, which the question pins it by")
    return None


def _answer_thought(qa: QA, last_from_text: bool) -> str:
    edge = qa.path_edges[-1]
    if last_from_text:
        return f"The text says that {_fact(edge)}, so the answer is {qa.answer}."
    return f"The graph shows that {_fact(edge)}, so the answer is {qa.answer}."


def ikg_template_trajectory(qa: QA, view: IKGView, env: ToolRunner, *, run_id: str | None = None) -> Trajectory:
    """The template trajectory of ``qa`` on ``view`` (module docstring), accepted, or rejected with the reason.
    ``env`` is the view's tool environment (``tasks.env.ikg.viewed_environment``) offering ``IKG_TEMPLATE_TOOLS``.
    Its ``qa_id`` is the question's; its id is the variant's (``ikg_trajectory_id``)."""
    base = dict(trajectory_id=ikg_trajectory_id(view), qa_id=qa.qa_id, kind="template", sample=0, domain=qa.domain,
                snapshot_id=qa.snapshot_id, split=qa.split, question=qa.question, golden_answer=qa.answer,
                tools=list(IKG_TEMPLATE_TOOLS), gold_path=list(qa.path), gold_source="question_path", run_id=run_id,
                model=None, writer="template")  # fmt: skip
    system = build_system_prompt(env, qa.domain, AgentConfig(style="api", tools=IKG_TEMPLATE_TOOLS))
    steps, thoughts, problem = run_ikg_tools(env, qa, view)
    if problem is not None:
        return Trajectory(**base, status="rejected", reject_reason=problem[0], detail=problem[1],
                          messages=template_messages(system, qa.question, qa.answer, steps)[:-1], n_rounds=len(steps))
    thoughts.append(_answer_thought(qa, _hidden(view, qa.path_edges[-1])))
    leak = thought_problems(thoughts, qa.question, qa.path, steps)
    messages = template_messages(system, qa.question, qa.answer, steps)
    if leak is not None:
        return Trajectory(**base, status="rejected", reject_reason="thoughts_leak", detail=leak[1], messages=messages,
                          reasoning=list(thoughts), n_rounds=len(steps))
    return Trajectory(**base, status="accepted", messages=messages, reasoning=list(thoughts), final_answer=qa.answer,
                      n_rounds=len(steps), end_reason="answer")


def shows_the_switch(traj: Trajectory) -> bool:
    """Whether a trajectory holds Graph-RFT's switch: a graph tool's no-information reply, then a ``web_search``
    whose passages come back, then the graph again (or the answer)."""
    msgs = [m for m in traj.messages if m.get("role") in ("assistant", "tool")]
    for i, m in enumerate(msgs):
        if m.get("role") == "tool" and str(m.get("content", "")).startswith(NO_INFORMATION):
            rest = msgs[i + 1 :]
            calls = [c["function"]["name"] for r in rest for c in (r.get("tool_calls") or [])]
            return bool(calls) and calls[0] == "web_search"
    return False


__all__ = ["IKG_TEMPLATE_TOOLS", "NO_INFORMATION", "ikg_template_trajectory", "ikg_trajectory_id", "passages_stating",
           "run_ikg_tools", "shows_the_switch"]
