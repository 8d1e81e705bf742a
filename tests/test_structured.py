"""Pure structured-output helpers on clean, noisy, empty and malformed text."""

from __future__ import annotations

from typing import Optional

import pytest
from hypothesis import given, strategies as st
from pydantic import BaseModel

from gateway.structured import check_enums, check_schema, extract_json, model_schema, response_format, split_reasoning


class Inner(BaseModel):
    name: str


class Outer(BaseModel):
    path: list[str]
    answer: str
    note: Optional[str] = None
    inner: Inner


@pytest.mark.parametrize(
    "content, field, answer, reasoning",
    [
        ("plain", None, "plain", None),
        ("<think>a</think>b", None, "b", "a"),
        ("<THINK>\n a \n</THINK>\n\n b", None, "b", "a"),
        ("answer", "thought", "answer", "thought"),
        ("<think>cut off mid thought", None, "", "cut off mid thought"),
        ("reasoning only closing</think>final", None, "final", "reasoning only closing"),
        ("", None, "", None),
        (None, None, "", None),
    ],
)
def test_split_reasoning(content, field, answer, reasoning):
    assert split_reasoning(content, field) == (answer, reasoning)


@pytest.mark.parametrize(
    "text, value",
    [
        ('{"a": 1}', {"a": 1}),
        ('Sure! ```json\n{"a": 1}\n``` done', {"a": 1}),
        ('noise {"a": {"b": [1, 2]}} trailing', {"a": {"b": [1, 2]}}),
        ("[1, 2]", [1, 2]),
        ('text {bad} then {"ok": true}', {"ok": True}),
    ],
)
def test_extract_json(text, value):
    assert extract_json(text) == value


@pytest.mark.parametrize("text, words", [("", "empty"), ("no json here", "no JSON"), ('{"a": [1, 2', "cut off")])
def test_extract_json_failures(text, words):
    with pytest.raises(ValueError, match=words):
        extract_json(text)


@given(st.text(max_size=200))
def test_extract_json_never_crashes_on_garbage(text):
    try:
        extract_json(text)
    except ValueError:
        pass


def test_model_schema_inlines_refs_and_applies_enums():
    s = model_schema(Outer, enums={"answer": ["x", "y"], "path[]": ["x", "y", "z"], "inner.name": ["n"], "note": ["a"]})
    assert "$defs" not in s and "$ref" not in str(s)
    assert s["properties"]["answer"]["enum"] == ["x", "y"]
    assert s["properties"]["path"]["items"]["enum"] == ["x", "y", "z"]
    assert s["properties"]["inner"]["properties"]["name"]["enum"] == ["n"]
    with pytest.raises(KeyError, match="no field"):
        model_schema(Outer, enums={"missing": ["a"]})
    with pytest.raises(ValueError, match="empty"):
        model_schema(Outer, enums={"answer": []})


def test_check_enums_reports_each_violation():
    s = model_schema(Outer, enums={"answer": ["x"], "path[]": ["x", "y"]})
    problems = check_enums({"path": ["x", "q"], "answer": "z", "inner": {"name": "n"}}, s)
    assert any("path[1]" in p and "'q'" in p for p in problems)
    assert any(p.startswith("answer") for p in problems)
    assert check_enums({"path": ["x"], "answer": "x", "inner": {"name": "n"}}, s) == []


def test_response_format_styles():
    s = {"type": "object"}
    assert response_format("json_schema", "N", s)["json_schema"] == {"name": "N", "schema": s, "strict": True}
    assert response_format("json_object_schema", "N", s) == {"type": "json_object", "schema": {"type": "object", "title": "N"}}
    assert response_format("json_object", "N", s) == {"type": "json_object"}
    assert response_format("none", "N", s) is None


QUESTION_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "array", "items": {"type": "string", "enum": ["Tamsin", "Exeter", "River Tamsin"]},
                 "minItems": 2, "maxItems": 3},
        "question": {"type": "string", "minLength": 10, "maxLength": 60, "pattern": "^[^\"]{0,40}Tamsin[^\"]{0,40}\\?$"},
        "answer": {"type": "string", "enum": ["Exeter", "River Tamsin"]},
        "score": {"type": "integer", "minimum": 0, "maximum": 5},
        "note": {"anyOf": [{"type": "string", "maxLength": 5}, {"type": "null"}]},
    },
    "required": ["path", "question", "answer"],
    "additionalProperties": False,
}  # fmt: skip


def _good(**kw):
    return {"path": ["Tamsin", "Exeter"], "question": "Which city lies on Tamsin?", "answer": "Exeter", **kw}


@pytest.mark.parametrize(
    "value, where, words",
    [
        (_good(question="Tamsin?"), "question", "fewer than the minimum 10"),
        (_good(question="Which city, far from here, lies on Tamsin, and why is it so, then?"), "question", "more than the maximum 60"),
        (_good(question="Which city lies on the river?"), "question", "does not match the required pattern"),
        (_good(question="Which city lies on Tamsin"), "question", "does not match"),
        (_good(question=7), "question", "expected string"),
        (_good(answer="Paris"), "answer", "not one of the allowed values"),
        (_good(path=["Tamsin"]), "path", "fewer than the minimum 2"),
        (_good(path=["Tamsin", "Exeter", "River Tamsin", "Exeter"]), "path", "more than the maximum 3"),
        (_good(path=["Tamsin", "Rome"]), "path[1]", "not one of the allowed values"),
        ({"path": ["Tamsin", "Exeter"], "answer": "Exeter"}, "question", "required but missing"),
        (_good(extra=1), "value", "unexpected field(s) 'extra'"),
        (_good(score=9), "score", "above the maximum 5"),
        (_good(score=True), "score", "expected integer"),
        (_good(note="far too long"), "note", "more than the maximum 5"),
    ],
)
def test_check_schema_enforces_every_constraint(value, where, words):
    problems = check_schema(value, QUESTION_SCHEMA)
    assert len(problems) == 1 and problems[0].startswith(where + ":") and words in problems[0], problems


def test_check_schema_accepts_what_the_schema_allows():
    assert check_schema(_good(score=3, note=None), QUESTION_SCHEMA) == []
    assert check_schema(_good(score=2.0, note="ok"), QUESTION_SCHEMA) == []


def test_check_schema_reports_a_pattern_it_cannot_compile():
    assert "not a valid regular expression" in check_schema("abc", {"type": "string", "pattern": "(unclosed"})[0]

