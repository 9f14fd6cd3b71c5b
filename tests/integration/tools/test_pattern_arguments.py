"""Patterns a call compiles or parses (regexes, globs, nested JSON), through the dispatcher.

A pattern the process cannot compile, or could compile only by exhausting its stack or its
memory, is the caller's invalid input: an `invalid_input` receipt whose text names the
argument, never a `transient_failure` carrying Python's error.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.tools.files.globbing import compile_glob
from domain.session.events import ToolReceiptRecorded
from domain.values.attempts import AttemptEnd
from domain.values.authorization import DenialCategory
from domain.values.receipts import OutcomeCategory
from tests.pipeline import ALL, Pipeline, make_pipeline

NESTED_500 = "(" * 500 + "a" + ")" * 500


@pytest.fixture
def pipeline(tmp_path: Path) -> Iterator[Pipeline]:
    """A pipeline with a trusted work root holding one text file."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("hello\n")
    built = make_pipeline(tmp_path, roots=[(work, ALL)])
    yield built
    built.close()


def _work(pipeline: Pipeline) -> str:
    return str(pipeline.home.root.parent / "work")


def _receipts(pipeline: Pipeline) -> list[OutcomeCategory]:
    return [e.outcome for e in pipeline.events() if isinstance(e, ToolReceiptRecorded)]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        (NESTED_500, "pattern: too deeply nested"),
        ("(?:" * 300 + "a" + ")" * 300, "pattern: too deeply nested"),
        ("(?V1)" + "[" * 300 + "a" + "]" * 300, "pattern: too deeply nested to compile"),
        ("a{1000000000}", "pattern: too large"),
        ("(?:(?:a{100}){100}){100}", "pattern: too large"),
        ("a{" + "9" * 5000 + "}", "pattern: too large"),
        ("x" * 200_000, "pattern: too long"),
        ("(unclosed", "pattern: not a valid regular expression: missing )"),
    ],
    ids=["groups", "non-capturing", "sets", "repeat", "nested-repeats", "digits", "long", "syntax"],
)
async def test_a_grep_pattern_that_cannot_be_compiled_is_invalid_input(
    pipeline: Pipeline, pattern: str, says: str
) -> None:
    """A grep pattern too deep, too large or malformed is invalid input naming it."""
    result = await pipeline.call("grep", pattern=pattern, path=_work(pipeline))
    assert OutcomeCategory.INVALID_INPUT == result.outcome
    assert says in result.text
    assert "Error" not in result.text
    assert [OutcomeCategory.INVALID_INPUT] == _receipts(pipeline)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "pattern",
    ["(" * 100 + "hel" + ")" * 100, "h(?:e){1}l{2}o", "a{1,1000000000}|hello", r"\p{L}{5}"],
)
async def test_a_grep_pattern_within_the_bounds_still_searches(
    pipeline: Pipeline, pattern: str
) -> None:
    """Deep-enough groups, counted repeats and braced escapes compile and match as before."""
    result = await pipeline.call("grep", pattern=pattern, path=_work(pipeline))
    assert OutcomeCategory.SUCCESS == result.outcome
    assert "notes.txt:1: hello" in result.text


@pytest.mark.anyio
async def test_a_grep_glob_too_long_is_invalid_input_naming_the_glob(pipeline: Pipeline) -> None:
    """A glob over the length bound is invalid input that says `glob:`."""
    result = await pipeline.call("grep", pattern="hello", path=_work(pipeline), glob="a/" * 3000)
    assert OutcomeCategory.INVALID_INPUT == result.outcome
    assert result.text.startswith("glob: the pattern is too long")


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [("**/x.txt", True), ("**/y.txt", False), ("d/**", True), ("*/" * 500 + "**/x.txt", True)],
)
def test_a_glob_matches_a_path_five_thousand_directories_deep(pattern: str, expected: bool) -> None:
    """Matching a path never recurses, so no depth of directories overflows the stack."""
    assert expected == compile_glob(pattern)("d/" * 5000 + "x.txt")


@pytest.mark.anyio
async def test_a_find_files_pattern_leaving_the_directory_names_the_argument(
    pipeline: Pipeline,
) -> None:
    """An unusable find_files glob is invalid input that says `pattern:`."""
    await pipeline.call("load_tool", name="find_files")
    result = await pipeline.call("find_files", pattern="../*", path=_work(pipeline))
    assert OutcomeCategory.INVALID_INPUT == result.outcome
    assert result.text.startswith("pattern: the pattern '../*' may not contain '..'")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "says"),
    [("a/" * 300_000, "is longer than 4096 characters"), ("a\x00b", "contains a NUL character")],
    ids=["long", "nul"],
)
async def test_a_path_no_filesystem_call_could_use_is_refused_plainly(
    pipeline: Pipeline, path: str, says: str
) -> None:
    """A path too long or holding a NUL is denied as invalid input in one plain sentence."""
    result = await pipeline.call("read_file", path=f"{_work(pipeline)}/{path}")
    assert (AttemptEnd.DENIED, DenialCategory.INVALID_INPUT) == (result.end, result.denial)
    assert f"Denied (invalid_input): unusable path: the path {says}" == result.text
