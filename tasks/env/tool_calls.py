"""Reading tool calls and answers out of model output.

Three ways a model calls a tool, all read into the same ``ToolCall``:

- Python-call style inside ``<tool_call>...</tool_call>`` (Omne-R1's prompt):
  ``node_info(node_name="Rastrigin Function", graph_type="cs")``; single quotes and positional arguments
  (bound in the tool's declared parameter order) are accepted. The text is parsed with ``ast`` and only
  literal values are read (``ast.literal_eval`` on each argument node): nothing is ever evaluated.
- Qwen/hermes JSON inside ``<tool_call>``: ``{"name": "node_info", "arguments": {...}}`` (``arguments`` may
  also be a JSON string, and ``parameters`` is read as a synonym, as some chat templates emit it).
- OpenAI ``tool_calls`` entries returned by the API (``parse_api_tool_calls``).

A call that cannot be read, names an unknown tool, or has arguments that cannot be bound becomes a
``CallError`` whose ``observation()`` tells the model what was wrong and how to write the call, so a rollout
can continue. Argument *values* are checked later by ``ToolEnvironment.call`` against the tool's model.

Answers: ``extract_answer`` returns the content of the last ``<answer>...</answer>`` outside ``<think>``
blocks (the last one wins, as in Omne-R1's evaluation); ``parse_answer_list`` reads a list answer such as
``["Paris", "Lyon"]`` (Explore-on-Graph's format).
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from schemas.answers import parse_answer_list  # re-exported: answer extraction and list reading live together
from schemas.tools import TOOL_SPECS, CallError, CallStyle, ToolCall

#: A <tool_call> body longer than this is refused before parsing: a real call is a few hundred characters,
#: and ``ast.parse`` on megabytes of model babble would stall a rollout worker.
MAX_CALL_CHARS = 8000

_TOOL_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.S | re.I)
_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?```$", re.S)

_HOW_TO = (
    'Write one call per <tool_call> block, either as node_info(node_name="...", graph_type="...") or as '
    '{"name": "node_info", "arguments": {"node_name": "...", "graph_type": "..."}}.'
)
_HOW_TO_API = 'Send the arguments as one JSON object of named values, e.g. {"node_name": "...", "graph_type": "..."}.'


def _how_to(style: CallStyle | None) -> str:
    return _HOW_TO_API if style == "api" else _HOW_TO


@dataclass(frozen=True)
class Block:
    """One closed ``<tag>...</tag>`` block: ``text[start:end]`` is the whole block, ``text[inner_start:inner_end]``
    its content."""

    start: int
    inner_start: int
    inner_end: int
    end: int


@dataclass(frozen=True)
class TagScan:
    """Where one tag's blocks are in a text (``scan_tag``). ``blocks`` pair each opening tag with the next
    closing one, as the non-greedy pattern ``<tag>(.*?)</tag>`` would (an opening tag inside an open block is
    content). ``dangling`` is where the opening tag left open at the end starts (``None``: none),
    ``first_stray_close`` where the first closing tag outside any block starts (``None``: none)."""

    blocks: tuple[Block, ...]
    dangling: int | None
    first_stray_close: int | None


@functools.lru_cache(maxsize=64)
def _tag_patterns(tag: str, case_sensitive: bool) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    flags = 0 if case_sensitive else re.IGNORECASE
    t = re.escape(tag)
    return re.compile(f"<(/?){t}>", flags), re.compile(f"<{t}>", flags), re.compile(f"</{t}>", flags)


def scan_tag(text: str, tag: str, *, case_sensitive: bool = False) -> TagScan:
    """Every ``<tag>...</tag>`` block of ``text``: linear in the length of the text.

    A regular expression ``<tag>(.*?)</tag>`` rescans the rest of the text from every unmatched opening tag,
    which is quadratic: 17k repeated ``<think>`` tags took 28 s. Reward workers see such degenerate rollouts,
    so every reader of tagged blocks goes through here. Each search starts where the last one ended, and the
    Python loop runs once per block (plus twice), not once per tag: from an opening tag the next closing tag is
    searched for directly, and once a stray closing tag is recorded only opening tags are looked for."""
    either, opening, closing = _tag_patterns(tag, case_sensitive)
    blocks: list[Block] = []
    stray: int | None = None
    pos = 0
    while True:
        m = (either if stray is None else opening).search(text, pos)
        if m is None:
            return TagScan(tuple(blocks), None, stray)
        if stray is None and m.group(1):
            stray, pos = m.start(), m.end()
            continue
        c = closing.search(text, m.end())
        if c is None:
            return TagScan(tuple(blocks), m.start(), stray)
        blocks.append(Block(m.start(), m.end(), c.start(), c.end()))
        pos = c.end()


def cut_blocks(text: str, blocks: Sequence[Block], lo: int = 0, hi: int | None = None) -> str:
    """``text[lo:hi]`` with the ``blocks`` that lie inside it cut out."""
    hi = len(text) if hi is None else hi
    pieces, pos = [], lo
    for b in blocks:
        if b.start >= lo and b.end <= hi:
            pieces.append(text[pos : b.start])
            pos = b.end
    pieces.append(text[pos:hi])
    return "".join(pieces)


def strip_think(text: str, *, case_sensitive: bool = False) -> str:
    """``text`` without reasoning: closed ``<think>`` blocks, an unclosed ``<think>`` to the end, and
    everything before a lone leading ``</think>`` (templates that open the think block in the prompt)."""
    scan = scan_tag(text, "think", case_sensitive=case_sensitive)
    lo, hi = 0, len(text)
    if scan.dangling is not None:
        hi = scan.dangling
    elif scan.first_stray_close is not None:
        lo = scan.first_stray_close + len("</think>")
    return cut_blocks(text, scan.blocks, lo, hi)


def think_text(text: str, *, case_sensitive: bool = False) -> str:
    """All reasoning in ``text``, joined by newlines: every closed ``<think>`` block, the part before a lone
    leading ``</think>`` (chat templates that open the block in the prompt) and an unclosed ``<think>`` to the
    end. Linear in the length of the text (``scan_tag``)."""
    scan = scan_tag(text, "think", case_sensitive=case_sensitive)
    parts = [text[b.inner_start : b.inner_end] for b in scan.blocks]
    if scan.first_stray_close is not None and (scan.dangling is None or scan.first_stray_close < scan.dangling):
        parts.insert(0, cut_blocks(text, scan.blocks, 0, scan.first_stray_close))
    if scan.dangling is not None:
        parts.append(text[scan.dangling + len("<think>") :])
    return "\n".join(parts)


def has_tool_call(text: str) -> bool:
    """Whether the (reasoning-free part of the) text opens a ``<tool_call>`` block."""
    return "<tool_call>" in strip_think(text).lower()


def _short(text: str, n: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 3] + "..."


def _known(tools: Collection[str] | None) -> Collection[str]:
    return tools if tools is not None else TOOL_SPECS


def _unknown_tool(name: str, tools: Collection[str], style: CallStyle, raw: str, call_id: str | None = None) -> CallError:
    return CallError(
        kind="unknown_tool",
        message=f"Unknown tool {name!r}. Available tools: {', '.join(tools)}.",
        style=style,
        name=name,
        id=call_id,
        raw=raw,
    )


def _finish(
    name: str,
    positional: Sequence[Any],
    keywords: Mapping[str, Any],
    style: CallStyle,
    raw: str,
    tools: Collection[str],
    call_id: str | None = None,
) -> ToolCall | CallError:
    """Check the tool name and bind positional arguments to the tool's parameters in declared order."""
    if name not in tools or name not in TOOL_SPECS:
        return _unknown_tool(name, tools, style, raw, call_id)
    spec = TOOL_SPECS[name]
    params = spec.parameters
    if len(positional) > len(params):
        return CallError(
            kind="bad_arguments",
            message=f"{name} takes at most {len(params)} arguments, got {len(positional)}. Expected {spec.signature()}.",
            style=style, name=name, id=call_id, raw=raw,
        )  # fmt: skip
    args: dict[str, Any] = dict(zip(params, positional))
    for key, value in keywords.items():
        if key in args:
            return CallError(
                kind="bad_arguments",
                message=f"{name} got {key!r} twice (by position and by name). Expected {spec.signature()}.",
                style=style, name=name, id=call_id, raw=raw,
            )  # fmt: skip
        args[key] = value
    return ToolCall(name=name, arguments=args, style=style, id=call_id, raw=raw)


def _parse_error(reason: str, raw: str, style: CallStyle | None) -> CallError:
    return CallError(
        kind="parse_error",
        message=f"Could not read the tool call {_short(raw)!r}: {reason}. {_how_to(style)}",
        style=style,
        raw=raw,
    )


# -- Python-call style ---------------------------------------------------------------------------------------------


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return func.attr  # "functions.node_info(...)", as some templates print tools; one level only
    return None


def parse_python_call(body: str, tools: Collection[str] | None = None) -> ToolCall | CallError:
    """One ``name(arg, key=value, ...)`` call with literal arguments. Never evaluates anything."""
    tools = _known(tools)
    try:
        tree = ast.parse(body, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) and exc.msg else type(exc).__name__
        return _parse_error(f"not a function call ({reason})", body, "python")
    call = tree.body
    if not isinstance(call, ast.Call):
        return _parse_error("expected a function call such as node_info(...)", body, "python")
    name = _call_name(call.func)
    if name is None:
        return _parse_error("the called name must be a plain tool name", body, "python")
    positional: list[Any] = []
    keywords: dict[str, Any] = {}
    try:
        for node in call.args:
            if isinstance(node, ast.Starred):
                return _parse_error("*arguments are not allowed", body, "python")
            positional.append(ast.literal_eval(node))
        for kw in call.keywords:
            if kw.arg is None:
                return _parse_error("**arguments are not allowed", body, "python")
            if kw.arg in keywords:
                return _parse_error(f"argument {kw.arg!r} is given twice", body, "python")
            keywords[kw.arg] = ast.literal_eval(kw.value)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return _parse_error("argument values must be literals such as \"text\"", body, "python")
    return _finish(name, positional, keywords, "python", body, tools)


# -- JSON style ----------------------------------------------------------------------------------------------------


def _json_value(text: str) -> Any:
    """The first JSON value in ``text``; trailing text after it is ignored (models add stray words)."""
    try:
        return json.loads(text)
    except ValueError:
        value, _ = json.JSONDecoder().raw_decode(text)
        return value


def _from_json_object(obj: Any, raw: str, tools: Collection[str], style: CallStyle, call_id: str | None = None) -> ToolCall | CallError:
    if not isinstance(obj, Mapping):
        return _parse_error("expected a JSON object with \"name\" and \"arguments\"", raw, style)
    fn = obj.get("function")
    if isinstance(fn, Mapping) and "name" in fn:  # the OpenAI tool_calls shape pasted as text
        obj = fn
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return _parse_error("the object has no \"name\" string", raw, style)
    args: Any = obj.get("arguments", obj.get("parameters", {}))
    if args is None:
        args = {}
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            return CallError(
                kind="bad_arguments",
                message=f"The arguments of {name} are not valid JSON: {_short(args)!r}. {_how_to(style)}",
                style=style, name=name, id=call_id, raw=raw,
            )  # fmt: skip
    if isinstance(args, list):
        return _finish(name, args, {}, style, raw, tools, call_id)
    if not isinstance(args, Mapping):
        return CallError(
            kind="bad_arguments",
            message=f"The arguments of {name} must be a JSON object of named values. {_how_to(style)}",
            style=style, name=name, id=call_id, raw=raw,
        )  # fmt: skip
    return _finish(name, [], dict(args), style, raw, tools, call_id)


def parse_json_call(body: str, tools: Collection[str] | None = None) -> list[ToolCall | CallError]:
    """A hermes-style JSON call ``{"name": ..., "arguments": {...}}``, or a JSON list of them."""
    tools = _known(tools)
    try:
        value = _json_value(body)
    except (ValueError, RecursionError) as exc:
        return [_parse_error(f"invalid JSON ({type(exc).__name__}: {_short(str(exc), 80)})", body, "json")]
    if isinstance(value, list):
        if not value:
            return [_parse_error("an empty list holds no call", body, "json")]
        return [_from_json_object(v, body, tools, "json") for v in value]
    return [_from_json_object(value, body, tools, "json")]


# -- blocks in text, and API calls ---------------------------------------------------------------------------------


def parse_call_block(body: str, tools: Collection[str] | None = None) -> list[ToolCall | CallError]:
    """The call(s) in the body of one ``<tool_call>`` block, in whichever style it is written."""
    text = body.strip()
    fence = _FENCE.match(text)
    if fence:
        text = fence.group(1).strip()
    if not text:
        return [_parse_error("the block is empty", body, None)]
    if len(text) > MAX_CALL_CHARS:
        return [_parse_error(f"the block is longer than {MAX_CALL_CHARS} characters", text[:200], None)]
    if text[0] in "{[":
        return parse_json_call(text, tools)
    return [parse_python_call(text, tools)]


def parse_tool_calls(text: str, tools: Collection[str] | None = None) -> list[ToolCall | CallError]:
    """Every call in ``<tool_call>`` blocks of ``text`` (outside ``<think>``), in order.

    An unclosed last block (output cut off, or a stop sequence that ate the closing tag) is read up to the
    end of the text. ``tools`` are the names the caller offers (default: every tool in ``TOOL_SPECS``).
    """
    visible = strip_think(text)
    out: list[ToolCall | CallError] = []
    for m in _TOOL_BLOCK.finditer(visible):
        out.extend(parse_call_block(m.group(1), tools))
    return out


def _field(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def parse_api_tool_calls(tool_calls: Sequence[Any], tools: Collection[str] | None = None) -> list[ToolCall | CallError]:
    """Calls from an API response: the gateway's ``{"id", "name", "arguments"}`` dicts, OpenAI's
    ``{"id", "type": "function", "function": {"name", "arguments"}}`` dicts, or the SDK's objects.
    ``arguments`` may be a JSON string (the API's form) or an already decoded object."""
    tools = _known(tools)
    out: list[ToolCall | CallError] = []
    for tc in tool_calls:
        call_id = _field(tc, "id")
        fn = _field(tc, "function")
        source = fn if fn is not None else tc
        name = _field(source, "name")
        args = _field(source, "arguments")
        obj = {"name": name, "arguments": args}
        raw = json.dumps(obj, ensure_ascii=False, default=str)
        call = _from_json_object(obj, raw, tools, "api", call_id if isinstance(call_id, str) else None)
        if isinstance(call, CallError) and call.id is None and isinstance(call_id, str):
            call = call.model_copy(update={"id": call_id})
        out.append(call)
    return out


# -- writing calls back out ----------------------------------------------------------------------------------------


def format_python_call(call: ToolCall) -> str:
    """``name(key="value", ...)`` with arguments as Python literals (``repr``), the inverse of
    ``parse_python_call`` for the literal types tools take."""
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False) if isinstance(v, str) else repr(v)}" for k, v in call.arguments.items())
    return f"{call.name}({args})"


def format_tool_call(call: ToolCall, style: CallStyle = "python") -> str:
    """The ``<tool_call>`` block for ``call`` in Python-call or JSON style."""
    body = format_python_call(call) if style == "python" else call.as_json()
    return f"<tool_call>\n{body}\n</tool_call>"


def format_tool_response(text: str) -> str:
    """An observation as the model sees it in the text style (Omne-R1 wraps it in ``<tool_response>``)."""
    return f"<tool_response>\n{text}\n</tool_response>"


# -- answers ---------------------------------------------------------------------------------------------------------


def extract_answer(text: str, *, case_sensitive: bool = False) -> str | None:
    """The stripped content of the last ``<answer>...</answer>`` outside reasoning, or ``None`` when there is
    none (an unclosed ``<answer>`` does not count: the output was cut off before the answer was complete).
    ``case_sensitive`` reads lower-case tags only (rewards that hold the model to the exact format)."""
    visible = strip_think(text, case_sensitive=case_sensitive)
    blocks = scan_tag(visible, "answer", case_sensitive=case_sensitive).blocks
    if not blocks:
        return None
    last = blocks[-1]
    return visible[last.inner_start : last.inner_end].strip()


__all__ = [
    "MAX_CALL_CHARS",
    "Block",
    "TagScan",
    "cut_blocks",
    "scan_tag",
    "extract_answer",
    "format_python_call",
    "format_tool_call",
    "format_tool_response",
    "has_tool_call",
    "parse_answer_list",
    "parse_api_tool_calls",
    "parse_call_block",
    "parse_json_call",
    "parse_python_call",
    "parse_tool_calls",
    "strip_think",
    "think_text",
]
