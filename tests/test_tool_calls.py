"""Reading tool calls (Python-call and hermes JSON text, OpenAI tool_calls) and answers from model output."""

from __future__ import annotations

import pytest

from schemas.tools import CallError, ToolCall
from tasks.env.tool_calls import (
    MAX_CALL_CHARS,
    extract_answer,
    format_tool_call,
    format_tool_response,
    has_tool_call,
    parse_answer_list,
    parse_api_tool_calls,
    parse_tool_calls,
    strip_think,
)


def one(text: str, tools=None) -> ToolCall | CallError:
    calls = parse_tool_calls(text, tools)
    assert len(calls) == 1, calls
    return calls[0]


# -- Python-call style -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>node_info(node_name="Rastrigin Function", graph_type="cs")</tool_call>',
        "<tool_call>\nnode_info(node_name='Rastrigin Function', graph_type='cs')\n</tool_call>",
        '<tool_call>node_info("Rastrigin Function", "cs")</tool_call>',
        '<tool_call>node_info("Rastrigin Function", graph_type="cs")</tool_call>',
        '<tool_call>functions.node_info(node_name="Rastrigin Function", graph_type="cs")</tool_call>',
        '<TOOL_CALL> node_info(node_name="Rastrigin Function", graph_type="cs") </TOOL_CALL>',
        '<tool_call>```python\nnode_info(node_name="Rastrigin Function", graph_type="cs")\n```</tool_call>',
        # unclosed block at the end (stop sequence ate the closing tag)
        'I will look it up.\n<tool_call>node_info(node_name="Rastrigin Function", graph_type="cs")',
    ],
)
def test_python_call_variants(text):
    call = one(text)
    assert isinstance(call, ToolCall)
    assert call.name == "node_info" and call.style == "python"
    assert call.arguments == {"node_name": "Rastrigin Function", "graph_type": "cs"}


def test_python_call_keeps_literal_types_and_unicode():
    call = one('<tool_call>search(entity="Kant’s \\"Critique\\"")</tool_call>')
    assert call.arguments == {"entity": 'Kant’s "Critique"'}
    call = one("<tool_call>node_info(node_name=42, graph_type=None)</tool_call>")
    assert call.arguments == {"node_name": 42, "graph_type": None}  # types are the environment's business


def test_python_calls_are_never_evaluated(tmp_path):
    marker = tmp_path / "pwned"
    payloads = [
        f"node_info(node_name=open({str(marker)!r}, 'w').write('x'), graph_type='cs')",
        f"__import__('pathlib').Path({str(marker)!r}).touch()",
        "node_info(node_name=(lambda: 1)(), graph_type='cs')",
        "node_info(node_name='a' + 'b', graph_type='cs')",
        "node_info(*['a', 'cs'])",
        "node_info(**{'node_name': 'a'})",
        "node_info(node_name=x, graph_type='cs')",
    ]
    for p in payloads:
        call = one(f"<tool_call>{p}</tool_call>")
        assert isinstance(call, CallError) and call.kind == "parse_error", p
    assert not marker.exists()


@pytest.mark.parametrize(
    ("body", "kind", "fragment"),
    [
        ('node_info(node_name="x"', "parse_error", "'(' was never closed"),
        ("just some words", "parse_error", "not a function call"),
        ('"node_info"', "parse_error", "expected a function call"),
        ('tools["node_info"](node_name="x")', "parse_error", "plain tool name"),
        ('node_info(node_name="a", node_name="b")', "parse_error", "given twice"),
        ('teleport(to="Mars")', "unknown_tool", "Unknown tool 'teleport'. Available tools: entity_matcher,"),
        ('node_info("a", "cs", "extra")', "bad_arguments", "node_info takes at most 2 arguments, got 3"),
        ('node_info("a", node_name="b")', "bad_arguments", "got 'node_name' twice"),
        ("", "parse_error", "the block is empty"),
        ("(" * 300, "parse_error", "not a function call"),
    ],
)
def test_malformed_python_calls(body, kind, fragment):
    call = one(f"<tool_call>{body}</tool_call>")
    assert isinstance(call, CallError) and call.kind == kind
    assert fragment in call.message
    obs = call.observation()
    assert not obs.ok and obs.error_kind == kind and obs.text == call.message
    if kind == "parse_error":
        assert "Write one call per <tool_call> block" in call.message  # tells the model how to recover


def test_oversized_block_is_refused_before_parsing():
    call = one("<tool_call>node_info(node_name='" + "x" * MAX_CALL_CHARS + "')</tool_call>")
    assert isinstance(call, CallError) and "longer than" in call.message


def test_offered_tools_limit_what_parses():
    call = one('<tool_call>search(entity="x")</tool_call>', tools=["entity_matcher", "node_info"])
    assert isinstance(call, CallError) and call.kind == "unknown_tool"
    assert call.message == "Unknown tool 'search'. Available tools: entity_matcher, node_info."


# -- JSON style ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        '{"name": "entity_matcher", "arguments": {"node_name": "grazing", "graph_type": "agriculture"}}',
        '{"name": "entity_matcher", "arguments": "{\\"node_name\\": \\"grazing\\", \\"graph_type\\": \\"agriculture\\"}"}',
        '{"name": "entity_matcher", "parameters": {"node_name": "grazing", "graph_type": "agriculture"}}',
        '{"name": "entity_matcher", "arguments": ["grazing", "agriculture"]}',
        '{"type": "function", "function": {"name": "entity_matcher", "arguments": {"node_name": "grazing", "graph_type": "agriculture"}}}',
        '```json\n{"name": "entity_matcher", "arguments": {"node_name": "grazing", "graph_type": "agriculture"}}\n```',
        '{"name": "entity_matcher", "arguments": {"node_name": "grazing", "graph_type": "agriculture"}} thanks',
    ],
)
def test_json_call_variants(body):
    call = one(f"<tool_call>\n{body}\n</tool_call>")
    assert isinstance(call, ToolCall) and call.style == "json"
    assert call.name == "entity_matcher"
    assert call.arguments == {"node_name": "grazing", "graph_type": "agriculture"}


@pytest.mark.parametrize(
    ("body", "kind", "fragment"),
    [
        ('{"name": "node_info", "arguments": {"node_name": "x"', "parse_error", "invalid JSON"),
        ('{"arguments": {"node_name": "x"}}', "parse_error", 'no "name" string'),
        ('{"name": "node_info", "arguments": "{not json"}', "bad_arguments", "not valid JSON"),
        ('{"name": "node_info", "arguments": 7}', "bad_arguments", "must be a JSON object"),
        ('{"name": "fly", "arguments": {}}', "unknown_tool", "Unknown tool 'fly'"),
        ("[]", "parse_error", "empty list"),
        ('["node_info"]', "parse_error", "expected a JSON object"),
    ],
)
def test_malformed_json_calls(body, kind, fragment):
    call = one(f"<tool_call>{body}</tool_call>")
    assert isinstance(call, CallError) and call.kind == kind and fragment in call.message


def test_several_calls_in_order_and_think_is_ignored():
    text = (
        "<think>maybe <tool_call>search(entity='wrong')</tool_call></think>\n"
        '<tool_call>entity_matcher(node_name="a", graph_type="cs")</tool_call>\n'
        '<tool_call>[{"name": "search", "arguments": {"entity": "b"}}, {"name": "node_info", "arguments": {"node_name": "c"}}]</tool_call>'
    )
    calls = parse_tool_calls(text)
    assert [(c.name, c.style) for c in calls] == [("entity_matcher", "python"), ("search", "json"), ("node_info", "json")]
    assert parse_tool_calls("no calls here") == []
    assert parse_tool_calls("<think>only <tool_call>search(entity='x')</tool_call>") == []
    assert has_tool_call("x <tool_call>") and not has_tool_call("<think><tool_call>search()</tool_call></think>")


def test_format_round_trips_through_the_parser():
    call = ToolCall(name="node_info", arguments={"node_name": 'He said "hi"\n', "graph_type": "cs"}, style="python")
    for style in ("python", "json"):
        text = format_tool_call(call, style)
        assert text.startswith("<tool_call>\n") and text.endswith("\n</tool_call>")
        back = one(text)
        assert isinstance(back, ToolCall) and back.arguments == call.arguments and back.style == style
    assert format_tool_response("obs") == "<tool_response>\nobs\n</tool_response>"


def test_repeat_key_ignores_argument_order():
    a = one('<tool_call>node_info(node_name="x", graph_type="cs")</tool_call>')
    b = one('<tool_call>{"name": "node_info", "arguments": {"graph_type": "cs", "node_name": "x"}}</tool_call>')
    c = one('<tool_call>node_info("x", "cs")</tool_call>')
    assert a.key() == b.key() == c.key()
    assert a.key() != one('<tool_call>node_info("y", "cs")</tool_call>').key()


# -- OpenAI tool_calls -----------------------------------------------------------------------------------------------


class _Fn:
    def __init__(self, name, arguments):
        self.name, self.arguments = name, arguments


class _SdkCall:
    def __init__(self, id, name, arguments):
        self.id, self.type, self.function = id, "function", _Fn(name, arguments)


def test_api_tool_calls_all_shapes():
    calls = parse_api_tool_calls(
        [
            {"id": "c1", "name": "node_info", "arguments": '{"node_name": "A", "graph_type": "cs"}'},  # gateway shape
            {"id": "c2", "type": "function", "function": {"name": "search", "arguments": {"entity": "B"}}},
            _SdkCall("c3", "entity_matcher", '{"node_name": "C", "graph_type": "cs"}'),
            {"id": "c4", "name": "search", "arguments": ""},
        ]
    )
    assert all(isinstance(c, ToolCall) and c.style == "api" for c in calls)
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("c1", "node_info", {"node_name": "A", "graph_type": "cs"}),
        ("c2", "search", {"entity": "B"}),
        ("c3", "entity_matcher", {"node_name": "C", "graph_type": "cs"}),
        ("c4", "search", {}),
    ]


def test_api_tool_call_errors_keep_their_ids():
    calls = parse_api_tool_calls(
        [
            {"id": "x1", "name": "fly", "arguments": "{}"},
            {"id": "x2", "name": "search", "arguments": "{broken"},
            {"id": "x3", "name": None, "arguments": "{}"},
        ]
    )
    assert [(c.kind, c.id) for c in calls] == [("unknown_tool", "x1"), ("bad_arguments", "x2"), ("parse_error", "x3")]
    assert "Send the arguments as one JSON object" in calls[1].message  # no <tool_call> advice for API calls


# -- answers ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("<answer>Continuous Grazing</answer>", "Continuous Grazing"),
        ("<answer>\n  Paris \n</answer>", "Paris"),
        ("<answer>first</answer> then <answer>second</answer>", "second"),
        ("<think>it is <answer>wrong</answer></think><answer>right</answer>", "right"),
        ("<ANSWER>X</ANSWER>", "X"),
        ("<answer></answer>", ""),
        ("no answer", None),
        ("<answer>cut off", None),
        ("<think>unclosed <answer>x</answer>", None),
    ],
)
def test_extract_answer(text, answer):
    assert extract_answer(text) == answer


@pytest.mark.parametrize(
    ("answer", "items"),
    [
        ('["Paris", "Lyon"]', ["Paris", "Lyon"]),
        ("['Paris', 'Lyon', 'Paris']", ["Paris", "Lyon"]),
        ('[" a ", "", "b"]', ["a", "b"]),
        ("[1, 2]", ["1", "2"]),
        ("King's College, Cambridge", ["King's College, Cambridge"]),
        ("[not a list", ["[not a list"]),
        ("[broken, list]", ["[broken, list]"]),
        ("", []),
        (None, []),
    ],
)
def test_parse_answer_list(answer, items):
    assert parse_answer_list(answer) == items


def test_strip_think():
    assert strip_think("<think>a</think>b<think>c</think>d") == "bd"
    assert strip_think("reasoning only</think>answer") == "answer"
    assert strip_think("x<think>never closed") == "x"
