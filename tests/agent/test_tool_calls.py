"""The tool-call parser: whatever a model writes, it never raises."""

from __future__ import annotations

import asyncio
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from gem_eval.agent import tool_calls
from gem_eval.models import tool_call
from tests.agent.test_loop import Add, Calc

TOOLS = [Add(), Calc()]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
fragments = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        ["<tool_call>", "</tool_call>", "<calc>", "</calc>", '{"name": "add"', "}", '"arguments":']
    ),
    json_values.map(lambda v: f"<tool_call>{json.dumps(v)}</tool_call>"),
    st.builds(
        lambda name, args: (
            "<tool_call>" + json.dumps({"name": name, "arguments": args}) + "</tool_call>"
        ),
        st.sampled_from(["add", "calc", "mul", ""]),
        json_values,
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(fragments, max_size=6).map("".join))
def test_text_calls_never_raise_and_always_answer(text: str) -> None:
    calls = tool_calls.from_text(text, TOOLS)
    for call in calls:
        result = asyncio.run(tool_calls.execute(call, TOOLS))
        assert isinstance(result.output, str)
        if call.error or call.name not in ("add", "calc"):
            assert result.is_error


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["add", "calc", "x"]),
    st.one_of(st.text(max_size=30), json_values.map(lambda v: json.dumps(v))),
)
def test_native_calls_never_raise(name: str, arguments: str) -> None:
    call = tool_calls.from_native(tool_call(name, arguments))
    result = asyncio.run(tool_calls.execute(call, TOOLS))
    assert isinstance(result.output, str)


def test_calls_are_read_in_the_order_written() -> None:
    add = '<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>'
    text = f"<calc>1+1</calc> then {add} <calc>2+2</calc>"
    calls = tool_calls.from_text(text, TOOLS)
    assert [(c.name, c.arguments) for c in calls] == [
        ("calc", {"expression": "1+1"}),
        ("add", {"a": 1, "b": 2}),
        ("calc", {"expression": "2+2"}),
    ]


def test_double_encoded_arguments_are_accepted() -> None:
    [call] = tool_calls.from_text(
        '<tool_call>{"name": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2}"}</tool_call>', TOOLS
    )
    assert call.arguments == {"a": 1, "b": 2}
