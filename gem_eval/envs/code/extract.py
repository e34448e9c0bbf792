"""What the code envs take out of text: the program from an answer, the cases from tests.

:func:`extract_code` finds the candidate program in the agent's answer:

* the last fenced block tagged ``python`` (``py``, ``python3``, ``py3``), else the last
  untagged one (``` or ~~~ fences; other languages are ignored);
* a final fence left open (a generation cut off by its token limit) counts as a block;
* what comes before the last ``</think>`` (a reasoning model's thoughts) is dropped first;
* with no fence at all, the whole answer when it parses as Python and is more than a bare
  name or constant (``print(input())`` counts, ``Hello`` does not);
* otherwise ``None``: a format error.

:func:`split_tests` cuts Python test code into cases so that a run knows how many passed:
each top-level statement that runs an ``assert`` is a case; ``def check(candidate)``
(HumanEval style) has its body lifted to module level with ``candidate`` bound to the
entry point, so each of its asserts is a case too; with no asserts at top level, each
``def test_*()`` is a case; failing all that, the whole code is one case.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field
from typing import TypeGuard

PYTHON_TAGS = frozenset({"python", "python3", "py", "py3"})
"""Fence tags taken for Python."""

_FENCE = re.compile(
    r"(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+#.-]*)(?P<info>.*)"
)


def extract_code(text: str) -> str | None:
    """The program in an answer (see the module docstring), or ``None``. Linear in the
    length of the answer, however its fences are (mis)placed."""
    end_of_thought = text.lower().rfind("</think>")
    if end_of_thought >= 0:
        text = text[end_of_thought + len("</think>") :]
    blocks = _fenced_blocks(text)
    if blocks:
        tagged = [code for lang, code in blocks if lang in PYTHON_TAGS and code.strip()]
        plain = [code for lang, code in blocks if not lang and code.strip()]
        chosen = tagged or plain
        return chosen[-1].rstrip() + "\n" if chosen else None
    bare = text.strip()
    return bare + "\n" if bare and _looks_like_code(bare) else None


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, code)`` of each fenced block, a last one left open included."""
    blocks: list[tuple[str, str]] = []
    fence: tuple[str, str, str] | None = None  # indent, fence, language of the open block
    body: list[str] = []
    for line in text.splitlines(keepends=True):
        if fence is None:
            match = _FENCE.match(line.rstrip("\r\n"))
            if match and not (match["fence"][0] == "`" and "`" in match["info"]):
                fence, body = (match["indent"], match["fence"], match["lang"].lower()), []
            continue
        closing = line.strip()
        if len(closing) >= len(fence[1]) and closing == fence[1][0] * len(closing):
            blocks.append((fence[2], _unindent("".join(body), fence[0])))
            fence = None
        else:
            body.append(line)
    if fence is not None:  # cut off by the token limit
        blocks.append((fence[2], _unindent("".join(body), fence[0])))
    return blocks


def _unindent(code: str, indent: str) -> str:
    """``code`` with up to ``len(indent)`` leading spaces taken off each line (a fence
    indented inside a list item indents its code by as much)."""
    if not indent:
        return code
    width = len(indent)
    return "".join(
        line[min(width, len(line) - len(line.lstrip(" \t"))) :]
        for line in code.splitlines(keepends=True)
    )


def _looks_like_code(text: str) -> bool:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    bare = (ast.Constant, ast.Name, ast.Attribute, ast.Tuple, ast.BinOp, ast.Compare)
    return any(not (isinstance(s, ast.Expr) and isinstance(s.value, bare)) for s in tree.body)


def defines(code: str, name: str) -> bool:
    """Whether ``code`` defines ``name`` at top level (a function, class or assignment)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if stmt.name == name:
                return True
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
    return False


@dataclass
class TestCases:
    """Test code cut into steps, in run order.

    Attributes:
        steps: ``(code, case, setup)``: a case's code (``setup`` false), or code that
            prepares the cases (``setup`` true), charged to the case that follows it (the
            last case when none follows): if setup code raises, that case fails.
        labels: Per case, its first line (for failure messages).
    """

    steps: list[tuple[str, int, bool]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.labels)


def split_tests(tests: str | list[str], entry_point: str | None = None) -> TestCases:
    """Cut test code into cases (see the module docstring).

    Args:
        tests: Python test code, or a list of snippets (each one case, MBPP style).
        entry_point: The function under test: what ``check(candidate)`` is called with
            when the code does not call it itself.

    Raises:
        ValueError: The code does not parse, or has no test in it.
    """
    cases = _Builder()
    if not isinstance(tests, (str, list)):
        kind = type(tests).__name__
        raise ValueError(f"tests must be Python code or a list of snippets, not {kind}")
    if isinstance(tests, list):
        for snippet in tests:
            if str(snippet).strip():
                _parse(str(snippet))
                cases.case(str(snippet).strip())
    else:
        _split_module(tests, _parse(tests), entry_point, cases)
    if not cases.labels:
        raise ValueError("the tests hold no test")
    return cases.finish()


def _parse(code: str) -> ast.Module:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError) as exc:
        raise ValueError(f"the test code does not parse: {exc}") from None


def _split_module(source: str, tree: ast.Module, entry_point: str | None, cases: _Builder) -> None:
    defs = [stmt for stmt in tree.body if _is_def(stmt)]
    check = next((d for d in defs if d.name == "check"), None)
    call = next((s for s in reversed(tree.body) if _calls_check(s)), None) if check else None
    target = None
    if isinstance(call, ast.Expr) and isinstance(call.value, ast.Call):
        target = ast.get_source_segment(source, call.value.args[0])
    target = target or entry_point
    if check is not None and not target:
        raise ValueError("the tests define check(candidate) but no entry_point to call it with")
    for stmt in tree.body:
        if stmt is call:
            continue
        if _runs_assert(stmt):
            cases.case(_text(source, stmt))
        else:
            cases.setup(_text(source, stmt))
    if check is not None and target:
        param = check.args.args[0].arg if len(check.args.args) == 1 else None
        if param and _liftable(check):
            cases.setup(f"{param} = {target}")
            for stmt in check.body:
                (cases.case if _runs_assert(stmt) else cases.setup)(_text(source, stmt))
        else:
            cases.case(f"check({target})")
    elif not cases.labels:
        for fn in defs:
            if fn.name.startswith("test") and not _required_args(fn):
                cases.case(f"{fn.name}()")
    if not cases.labels:
        cases.clear()
        cases.case(source)


def _is_def(stmt: ast.stmt) -> TypeGuard[ast.FunctionDef | ast.AsyncFunctionDef]:
    return isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))


def _required_args(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    return len(fn.args.args) - len(fn.args.defaults)


def _calls_check(stmt: ast.stmt) -> bool:
    value = stmt.value if isinstance(stmt, ast.Expr) else None
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "check"
        and len(value.args) == 1
        and not value.keywords
    )


def _own_nodes(node: ast.AST) -> list[ast.AST]:
    """The nodes of ``node`` that run with it: not those of functions it defines."""
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        out.append(child)
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(child))
    return out


def _runs_assert(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Assert):
        return True
    return not _is_def(stmt) and any(isinstance(n, ast.Assert) for n in _own_nodes(stmt))


def _liftable(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``fn``'s body can run at module level unchanged."""
    blocked = (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal)
    return isinstance(fn, ast.FunctionDef) and not any(
        isinstance(n, blocked) for stmt in fn.body for n in [stmt, *_own_nodes(stmt)]
    )


def _text(source: str, stmt: ast.stmt) -> str:
    segment = ast.get_source_segment(source, stmt, padded=True)
    if segment is None:
        return ast.unparse(stmt)
    return textwrap.dedent(segment)


class _Builder:
    """Collects steps; setup code waits for the case it belongs to."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.steps: list[tuple[str, int, bool]] = []
        self.labels: list[str] = []
        self.pending: list[str] = []

    def setup(self, code: str) -> None:
        self.pending.append(code)

    def case(self, code: str) -> None:
        index = len(self.labels)
        if self.pending:
            self.steps.append(("\n".join(self.pending), index, True))
            self.pending = []
        self.steps.append((code, index, False))
        lines = code.strip().splitlines() or [""]
        label = lines[0][:120] + (" ..." if len(lines) > 1 or len(lines[0]) > 120 else "")
        self.labels.append(label)

    def finish(self) -> TestCases:
        if self.pending:  # setup after the last case: charged to it
            self.steps.append(("\n".join(self.pending), len(self.labels) - 1, True))
        return TestCases(self.steps, self.labels)
