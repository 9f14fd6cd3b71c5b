"""The recorded provider: a journaled session's replies played back against today's tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.providers.recorded import RecordingError
from domain.agent import records
from domain.values.receipts import OutcomeCategory
from tests.agent_rig import AgentRig, agent_home, reply
from tests.cli_runner import invoke


def with_recording(home_config: Path, session: str) -> None:
    """Add a `[models.replayed]` table playing `session` back."""
    text = home_config.read_text()
    text += (
        f'\n[models.replayed]\nprovider = "recorded"\nmodel = "replayed"\nrecording = "{session}"\n'
    )
    home_config.write_text(text)


def test_a_recording_replays_the_conversation_and_runs_the_calls_again(tmp_path: Path) -> None:
    """The same replies come back in order; the call runs against the file as it is now."""
    notes = tmp_path / "proj" / "notes.md"
    home = agent_home(
        tmp_path, [reply("Reading.", ("c1", "read_file", {"path": str(notes)})), reply("Done.")]
    )
    notes.write_text("first version")
    [recorded] = AgentRig(home).run("read my notes")
    notes.unlink()
    with_recording(home.config, str(recorded.session_id))
    rig = AgentRig(home)

    [replayed] = rig.run("read my notes", model="replayed")

    assert "Done." == replayed.answer
    assert recorded.session_id != replayed.session_id
    assert [OutcomeCategory.NOT_FOUND] == [a.outcome for a in rig.of(records.CallAnswered)]
    assert ["replayed", "replayed"] == [a.model for a in rig.of(records.ModelAsked)]


def test_a_recording_that_names_no_session_is_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unknown session is a configuration error (exit 4) naming the recording."""
    home = agent_home(tmp_path, [reply("x")])
    with_recording(home.config, "ses_0000")
    monkeypatch.setenv("LEDGERCLAW_HOME", str(home.root))

    code, _out, err = invoke("run", "--model", "replayed", "hi")

    assert 4 == code
    assert "recording ses_0000:" in err


def test_a_recording_without_model_replies_cannot_be_played(tmp_path: Path) -> None:
    """A session whose runs never asked a model holds nothing to play."""
    home = agent_home(tmp_path, [reply("x")], window=1_024, reserve=1_000)
    [outcome] = AgentRig(home).run("too big to ask")  # ends context_exhausted: no reply
    with_recording(home.config, str(outcome.session_id))

    with pytest.raises(RecordingError, match="holds no model reply to play"):
        AgentRig(home).run("again", model="replayed")
