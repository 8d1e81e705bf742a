"""Structured output: JSON schemas for requests, reasoning separation, tolerant JSON extraction.

These are pure functions so they can be tested on clean, noisy, empty and malformed text.
"""

from __future__ import annotations

import copy
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


def check_enums(value: Any, schema: dict[str, Any]) -> list[str]:
    """Enum constraints that pydantic cannot see (they were added per request). Returns violations."""
    problems: list[str] = []

    def walk(val: Any, node: dict[str, Any], where: str) -> None:
        node = _non_null(node)
        if "enum" in node and val not in node["enum"]:
            shown = ", ".join(map(repr, node["enum"][:8])) + (" ..." if len(node["enum"]) > 8 else "")
            problems.append(f"{where or 'value'}: {val!r} is not one of the allowed values ({shown})")
            return
        if isinstance(val, dict) and "properties" in node:
            for k, sub in node["properties"].items():
                if k in val:
                    walk(val[k], sub, f"{where}.{k}" if where else k)
        elif isinstance(val, list) and "items" in node:
            for i, item in enumerate(val):
                walk(item, node["items"], f"{where}[{i}]")

    walk(value, schema, "")
    return problems
