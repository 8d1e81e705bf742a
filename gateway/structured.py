"""Structured output: JSON schemas for requests, reasoning separation, tolerant JSON extraction.

These are pure functions so they can be tested on clean, noisy, empty and malformed text.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from typing import Any

from pydantic import BaseModel

_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def split_reasoning(content: str | None, reasoning_field: str | None = None) -> tuple[str, str | None]:
    """Separate reasoning from the answer. Returns (answer_text, reasoning_text or None).

    Reasoning may arrive in a ``reasoning``/``reasoning_content`` field (vLLM, DeepSeek) or inline as
    ``<think>...</think>`` (Qwen3 and R1-style models without a reasoning parser). Both are kept; an unclosed
    ``<think>`` (output cut mid-thought) is all reasoning and no answer.
    """
    content = content or ""
    parts: list[str] = []
    if reasoning_field:
        parts.append(reasoning_field.strip())
    inline = _THINK.findall(content)
    if inline:
        parts.extend(p.strip() for p in inline)
        content = _THINK.sub("", content)
    lowered = content.lower()
    if "<think>" in lowered:
        start = lowered.index("<think>")
        parts.append(content[start + len("<think>") :].strip())
        content = content[:start]
    elif "</think>" in lowered:
        # Some chat templates put <think> in the prompt, so only the closing tag reaches us.
        end = lowered.index("</think>")
        parts.append(content[:end].strip())
        content = content[end + len("</think>") :]
    reasoning = "\n\n".join(p for p in parts if p) or None
    return content.strip(), reasoning


def extract_json(text: str) -> Any:
    """Find the JSON value in model output: the whole text, a fenced block, or the first balanced {...}/[...].

    Raises ValueError with a short reason when there is none.
    """
    text = (text or "").strip()
    if not text:
        raise ValueError("empty output")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    for block in _FENCE.findall(text):
        try:
            return json.loads(block.strip())
        except json.JSONDecodeError:
            continue
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                value, _ = decoder.raw_decode(text[i:])
                return value
            except json.JSONDecodeError:
                continue
    raise ValueError("no JSON object found in the output" + (" (it looks cut off)" if text.count("{") > text.count("}") else ""))


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline ``$ref``s into ``$defs`` so the schema is self-contained (small grammar-based servers need it)."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node and isinstance(node["$ref"], str) and node["$ref"].startswith("#/$defs/"):
                name = node["$ref"].split("/")[-1]
                merged = {k: v for k, v in node.items() if k != "$ref"}
                return walk({**copy.deepcopy(defs[name]), **merged})
            return {k: walk(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


def model_schema(model: type[BaseModel], *, enums: dict[str, list[Any]] | None = None) -> dict[str, Any]:
    """The JSON schema of a pydantic model, self-contained, with optional per-request ``enum`` restrictions.

    ``enums`` maps a dotted field path to allowed values: ``{"answer": names, "path[]": names}`` restricts the
    string field ``answer`` and the items of the array field ``path``. This is how a caller limits answers to
    the node names of one subgraph for one request without defining a model per request.
    """
    schema = _inline_refs(model.model_json_schema())
    for path, values in (enums or {}).items():
        node = schema
        parts = path.split(".")
        for i, part in enumerate(parts):
            is_items = part.endswith("[]")
            name = part[:-2] if is_items else part
            props = node.get("properties", {})
            if name not in props:
                raise KeyError(f"{model.__name__} has no field {'.'.join(parts[: i + 1])!r}")
            node = props[name]
            node = _non_null(node)
            if is_items:
                node = _non_null(node["items"])
        if not values:
            raise ValueError(f"enum for {path!r} is empty: there is nothing the model could answer")
        node.pop("anyOf", None)
        node["enum"] = list(values)
    return schema


def _non_null(node: dict[str, Any]) -> dict[str, Any]:
    """For Optional fields pydantic writes anyOf [T, null]; descend into T."""
    if "anyOf" in node:
        for option in node["anyOf"]:
            if option.get("type") != "null":
                return option
    return node


def response_format(mode: str, name: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The ``response_format`` request field for an endpoint's structured-output style."""
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": {**schema, "title": name}}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def schema_instruction(name: str, schema: dict[str, Any]) -> str:
    """Text appended to the prompt so that every endpoint, constrained or not, knows the expected shape."""
    return (
        f"Reply with one JSON object only (no prose, no code fence) that matches this JSON schema "
        f"named {name}:\n{json.dumps(schema, ensure_ascii=False, separators=(',', ':'))}"
    )


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,), "null": (type(None),),
    "integer": (int,), "number": (int, float),
}  # fmt: skip


def _is_type(val: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(val, bool):
        return False  # JSON true is not a number, though Python's bool is an int
    if name == "integer" and isinstance(val, float):
        return val.is_integer()
    return isinstance(val, _JSON_TYPES.get(name, (object,)))


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _short(val: Any, limit: int = 80) -> str:
    text = repr(val)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_schema(value: Any, schema: dict[str, Any]) -> list[str]:
    """Every constraint of a (self-contained) JSON schema checked on a parsed response; returns one sentence per
    violation, naming the field. An endpoint may have ignored part of the schema (most ignore ``pattern`` or
    ``minLength`` at least partly, some ignore all of it), so the answer is held to the schema here, whatever
    the endpoint did.

    Checked: ``type``, ``enum``, ``const``, ``anyOf`` (one branch must hold), ``required``, ``properties``,
    ``additionalProperties: false``, ``items``, ``minItems``/``maxItems``, ``uniqueItems``,
    ``minLength``/``maxLength`` (in characters), ``pattern`` (searched, as JSON Schema specifies, with Python's
    ``re``), ``minimum``/``maximum``/``exclusiveMinimum``/``exclusiveMaximum``. A ``pattern`` Python cannot
    compile is reported as a violation rather than passed."""
    problems: list[str] = []
    _walk_schema(value, schema, "", problems)
    return problems


def _walk_schema(val: Any, node: dict[str, Any], where: str, problems: list[str]) -> None:
    at = where or "value"
    if "anyOf" in node:
        branches = node["anyOf"]
        results = []
        for branch in branches:
            sub: list[str] = []
            _walk_schema(val, branch, where, sub)
            if not sub:
                break
            results.append(sub)
        else:
            # Report the branch that came closest (fewest violations): usually the non-null one of an Optional.
            problems.extend(min(results, key=len) if results else [f"{at}: matches no allowed form"])
            return
    if "enum" in node and val not in node["enum"]:
        shown = ", ".join(map(repr, node["enum"][:8])) + (" ..." if len(node["enum"]) > 8 else "")
        problems.append(f"{at}: {_short(val)} is not one of the allowed values ({shown})")
        return
    if "const" in node and val != node["const"]:
        problems.append(f"{at}: must be {node['const']!r}, got {_short(val)}")
        return
    types = node.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        if not any(_is_type(val, t) for t in names):
            problems.append(f"{at}: expected {' or '.join(names)}, got {type(val).__name__} {_short(val)}")
            return
    if isinstance(val, str):
        n = len(val)
        if "minLength" in node and n < node["minLength"]:
            problems.append(f"{at}: {n} characters, fewer than the minimum {node['minLength']}")
        if "maxLength" in node and n > node["maxLength"]:
            problems.append(f"{at}: {n} characters, more than the maximum {node['maxLength']}")
        if "pattern" in node:
            rx = _compiled(node["pattern"])
            if rx is None:
                problems.append(f"{at}: the schema's pattern {node['pattern']!r} is not a valid regular expression")
            elif rx.search(val) is None:
                problems.append(f"{at}: {_short(val)} does not match the required pattern {node['pattern']!r}")
    elif isinstance(val, (int, float)) and not isinstance(val, bool):
        for key, ok, words in (
            ("minimum", lambda b: val >= b, "below the minimum"), ("maximum", lambda b: val <= b, "above the maximum"),
            ("exclusiveMinimum", lambda b: val > b, "not above"), ("exclusiveMaximum", lambda b: val < b, "not below"),
        ):  # fmt: skip
            if key in node and not ok(node[key]):
                problems.append(f"{at}: {val!r} is {words} {node[key]!r}")
    elif isinstance(val, list):
        if "minItems" in node and len(val) < node["minItems"]:
            problems.append(f"{at}: {len(val)} items, fewer than the minimum {node['minItems']}")
        if "maxItems" in node and len(val) > node["maxItems"]:
            problems.append(f"{at}: {len(val)} items, more than the maximum {node['maxItems']}")
        if node.get("uniqueItems"):
            seen: list[Any] = []
            for item in val:
                if item in seen:
                    problems.append(f"{at}: {_short(item)} appears more than once; items must be unique")
                    break
                seen.append(item)
        if isinstance(node.get("items"), dict):
            for i, item in enumerate(val):
                _walk_schema(item, node["items"], f"{where}[{i}]", problems)
    elif isinstance(val, dict):
        props = node.get("properties", {})
        for key in node.get("required", []):
            if key not in val:
                problems.append(f"{where + '.' if where else ''}{key}: required but missing")
        if node.get("additionalProperties") is False:
            extra = [k for k in val if k not in props]
            if extra:
                problems.append(f"{at}: unexpected field(s) {', '.join(map(repr, extra[:8]))}")
        for key, sub in props.items():
            if key in val:
                _walk_schema(val[key], sub, f"{where}.{key}" if where else key, problems)


def check_enums(value: Any, schema: dict[str, Any]) -> list[str]:
    """Every schema constraint (kept under its first name, when it checked the per-request enums only): see
    ``check_schema``."""
    return check_schema(value, schema)
