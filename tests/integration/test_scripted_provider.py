"""The scripted provider: a JSONL script of replies, failures and delays, played in order."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from adapters.providers.scripted import ScriptedProvider, ScriptError, load_script
from domain.agent.failover import Candidate, FailureKind
from domain.agent.finish import FinishReason
from domain.agent.replies import ModelFailure, ModelRequest, Usage

CANDIDATE = Candidate("scripted", "demo", "default")
REQUEST = ModelRequest(prefix="You are a test.")


def script(tmp_path: Path, *steps: object) -> Path:
    """A script file with one JSON line per step."""
    path = tmp_path / "script.jsonl"
    path.write_text("".join(json.dumps(step) + "\n" for step in steps))
    return path


@pytest.mark.anyio
async def test_a_reply_with_tool_calls_is_played_as_a_tool_turn(tmp_path: Path) -> None:
    """Calls, their arguments and usage come back; the finish defaults to a tool turn."""
    path = script(
        tmp_path,
        {
            "reply": {
                "text": "Reading it.",
                "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a"}}],
                "usage": {"input_tokens": 120, "output_tokens": 9, "cache_read_tokens": 100},
            }
        },
    )
    provider = ScriptedProvider.from_file(path)

    reply = await provider.reply(CANDIDATE, REQUEST)

    assert ("Reading it.", "tool_calls", FinishReason.TOOL_CALLS) == (
        reply.text,
        reply.raw_finish,
        reply.finish,
    )
    assert [("c1", "read_file", {"path": "a"})] == [
        (c.call_id, c.name, c.arguments) for c in reply.tool_calls
    ]
    assert Usage(input_tokens=120, output_tokens=9, cache_read_tokens=100) == reply.usage
    assert [REQUEST] == provider.requests


@pytest.mark.anyio
async def test_streamed_text_arrives_in_pieces_that_join_to_the_reply(tmp_path: Path) -> None:
    """`on_text` hears the answer word by word; joined, the pieces are the text."""
    provider = ScriptedProvider.from_file(
        script(tmp_path, {"reply": {"text": "The file has  ten lines.\n"}})
    )
    pieces: list[str] = []

    reply = await provider.reply(CANDIDATE, REQUEST, pieces.append)

    assert 1 < len(pieces)
    assert reply.text == "".join(pieces)
    assert FinishReason.STOP == reply.finish


@pytest.mark.anyio
async def test_a_scripted_failure_is_classified_like_a_servers(tmp_path: Path) -> None:
    """A 429 with a retry-after fails as rate_limited, then the next reply is played."""
    provider = ScriptedProvider.from_file(
        script(
            tmp_path,
            {"error": {"status": 429, "message": "slow down", "retry_after": 2}},
            {"reply": {"text": "ok"}},
        )
    )

    with pytest.raises(ModelFailure) as caught:
        await provider.reply(CANDIDATE, REQUEST)
    reply = await provider.reply(CANDIDATE, REQUEST)

    failure = caught.value
    assert (FailureKind.RATE_LIMITED, 429, 2.0, CANDIDATE) == (
        failure.kind,
        failure.status,
        failure.retry_after,
        failure.candidate,
    )
    assert "ok" == reply.text


@pytest.mark.anyio
async def test_a_cut_reply_keeps_its_raw_finish_and_is_not_a_tool_turn(tmp_path: Path) -> None:
    """A reply scripted as cut by its length limit carries calls that must never run."""
    provider = ScriptedProvider.from_file(
        script(
            tmp_path,
            {"reply": {"tool_calls": [{"id": "c1", "name": "write_file"}], "finish": "length"}},
            {"reply": {"text": "", "finish": None}},
        )
    )

    cut = await provider.reply(CANDIDATE, REQUEST)
    broken = await provider.reply(CANDIDATE, REQUEST)

    assert (FinishReason.LENGTH, FinishReason.BROKEN) == (cut.finish, broken.finish)


@pytest.mark.anyio
async def test_a_delay_waits_before_the_next_reply(tmp_path: Path) -> None:
    """`{"delay": 0.2}` holds the next reply back by at least that long."""
    provider = ScriptedProvider.from_file(
        script(tmp_path, {"delay": 0.2}, {"reply": {"text": "late"}})
    )
    began = time.monotonic()

    reply = await provider.reply(CANDIDATE, REQUEST)

    assert "late" == reply.text
    assert 0.2 <= time.monotonic() - began


@pytest.mark.anyio
async def test_a_script_that_ran_out_fails_as_a_bad_request(tmp_path: Path) -> None:
    """Asking past the last step is a failure no other candidate can fix."""
    provider = ScriptedProvider.from_file(script(tmp_path, {"reply": {"text": "only"}}))
    await provider.reply(CANDIDATE, REQUEST)

    with pytest.raises(ModelFailure, match="no reply left for request 2") as caught:
        await provider.reply(CANDIDATE, REQUEST)
    assert FailureKind.BAD_REQUEST == caught.value.kind


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"reply": {"text": "a"}}\nnot json\n', "line 2 is not JSON"),
        ('{"answer": "a"}\n', "line 1 is not a step"),
        ('{"delay": -1}\n', "line 1 is not a step"),
        ('{"reply": {"tool_calls": [{"name": "x"}]}}\n', "line 1 is not a step"),
    ],
)
def test_a_bad_line_is_refused_with_its_number_before_anything_is_asked(
    tmp_path: Path, text: str, expected: str
) -> None:
    """The whole script is checked when it is loaded."""
    path = tmp_path / "bad.jsonl"
    path.write_text(text)

    with pytest.raises(ScriptError, match=expected):
        load_script(path)


def test_a_missing_script_is_a_script_error(tmp_path: Path) -> None:
    """An unreadable script is refused with its path, not a trace."""
    with pytest.raises(ScriptError, match="cannot read the script"):
        load_script(tmp_path / "absent.jsonl")
