"""The terminal chat's conversation model: journaled rows, pushed events and the person's acts."""

from __future__ import annotations

from typing import Any

import pytest

from cli.chat_tui.approval import Choice, answer_request, choices, common_parent
from cli.chat_tui.conversation import Conversation
from cli.chat_tui.entries import ApprovalPrompt, Attachment, Notice, Said, Streaming, ToolCall
from cli.chat_tui.lines import cut, render, status_line

SESSION = "ses_" + "a" * 32
RUN = "run_" + "b" * 32
ATTEMPT = "att_" + "c" * 32


class Rows:
    """Journaled rows of one session, numbered from 1 as its stream is."""

    def __init__(self) -> None:
        self.position = 0

    def __call__(self, event: str, **fields: Any) -> dict[str, Any]:
        """The next row: `event` with `fields`."""
        self.position += 1
        return {"session": SESSION, "position": self.position, "event": event, "fields": fields}


def message(role: str, content: str, **more: Any) -> dict[str, Any]:
    """A journaled chat message."""
    return {"role": role, "content": content, "tool_calls": [], "call_id": None, **more}


def read_call() -> dict[str, Any]:
    """The model asking to read notes.md."""
    return {"call_id": "c1", "name": "read_file", "arguments": {"path": "/w/notes.md"}}


def texts(conversation: Conversation) -> list[str]:
    """Every entry as it reads."""
    return [render(entry).plain for entry in conversation.entries]


def run_with_a_read(conversation: Conversation, rows: Rows, *, approval: bool = False) -> None:
    """A run whose model reads a file, maybe after asking for consent."""
    conversation.apply_row(rows("session.run_started", run_id=RUN, client_run_id="k1"))
    conversation.apply_row(
        rows("session.message_appended", run_id=RUN, message=message("user", "hi"))
    )
    asked = message("assistant", "Let me look.", tool_calls=[read_call()])
    conversation.apply_row(rows("session.message_appended", run_id=RUN, message=asked))
    conversation.apply_row(
        rows("session.attempt_started", run_id=RUN, attempt_id=ATTEMPT, call_id="c1")
    )
    decision = "approval_required" if approval else "allow"
    targets = [{"path": "/w/notes.md", "operation": "read"}]
    conversation.apply_row(
        rows("session.policy_evaluated", attempt_id=ATTEMPT, decision=decision, targets=targets)
    )
    if approval:
        conversation.apply_row(
            rows(
                "session.approval_requested",
                run_id=RUN,
                attempt_id=ATTEMPT,
                summary="read it",
                mode="request",
                grant_key="read_file",
            )
        )


def test_a_row_at_or_below_the_last_position_is_not_shown_twice() -> None:
    """Replayed rows (a resumed subscription) are dropped; the position is the cursor."""
    conversation, rows = Conversation(SESSION), Rows()
    first = rows("session.message_appended", run_id=RUN, message=message("user", "hi"))

    applied = [conversation.apply_row(first), conversation.apply_row(first)]

    assert [True, False] == applied
    assert ["you> hi"] == texts(conversation)
    assert 1 == conversation.position


def test_another_sessions_rows_and_pushes_are_ignored() -> None:
    """Rows and deltas of other sessions change nothing."""
    conversation = Conversation(SESSION)
    other = {"session": "ses_" + "f" * 32, "position": 1, "event": "session.closed", "fields": {}}

    assert not conversation.apply_row(other)
    assert not conversation.apply_pushed("chat.delta", {"session": other["session"], "text": "x"})
    assert [] == conversation.entries


def test_streamed_pieces_show_until_the_journaled_answer_replaces_them() -> None:
    """chat.delta pieces join into one streaming entry; the assistant's message replaces it."""
    conversation, rows = Conversation(SESSION), Rows()
    for piece in ("They ", "say ", "hi."):
        conversation.apply_pushed("chat.delta", {"session": SESSION, "run_id": RUN, "text": piece})
    streaming = [e for e in conversation.entries if isinstance(e, Streaming)]

    conversation.apply_row(
        rows("session.message_appended", run_id=RUN, message=message("assistant", "They say hi."))
    )

    assert ["They say hi."] == [s.text for s in streaming]
    assert ["They say hi."] == texts(conversation)


def test_pieces_streamed_before_a_reconnection_are_dropped_and_new_ones_shown() -> None:
    """After a reconnection the stream restarts from the pieces that come next."""
    conversation = Conversation(SESSION)
    conversation.apply_pushed("chat.delta", {"session": SESSION, "run_id": RUN, "text": "lost "})

    conversation.linked(again=True)
    conversation.apply_pushed("chat.delta", {"session": SESSION, "run_id": RUN, "text": "kept"})

    streams = [e.text for e in conversation.entries if isinstance(e, Streaming)]
    assert ["kept"] == streams


def test_a_sent_message_is_pending_until_its_journaled_copy_arrives() -> None:
    """The echo of a send shows its state, then gives way to the journaled user message."""
    conversation, rows = Conversation(SESSION), Rows()
    conversation.linked(again=False)
    conversation.sending("k1", "hi")
    pending = texts(conversation)
    conversation.unlinked("gone", 1, 0.2)
    waiting = texts(conversation)

    conversation.apply_row(rows("session.run_started", run_id=RUN, client_run_id="k1"))
    conversation.apply_row(
        rows("session.message_appended", run_id=RUN, message=message("user", "hi"))
    )

    assert ["you> hi  (sending)"] == pending
    assert ["you> hi  (waiting for the daemon)"] == waiting
    assert ["you> hi"] == texts(conversation)
    assert RUN == conversation.running


def test_a_message_sent_while_disconnected_waits_for_the_daemon() -> None:
    """Typed while the link is down, a message says it waits, then sends once linked."""
    conversation = Conversation(SESSION)
    conversation.unlinked("nothing listens", 1, 0.2)
    conversation.sending("k1", "hi")
    waiting = texts(conversation)

    conversation.linked(again=True)

    assert ["you> hi  (waiting for the daemon)"] == waiting
    assert "you> hi  (sending)" == texts(conversation)[-1]


def test_a_steering_message_is_confirmed_by_its_text() -> None:
    """A steering echo carries no client run id: the journaled user message of that text ends it."""
    conversation, rows = Conversation(SESSION), Rows()
    conversation.apply_row(rows("session.run_started", run_id=RUN, client_run_id="k1"))
    conversation.steering("s1", "also this")
    conversation.sent("s1", {"status": "steered", "run_id": RUN})
    queued = texts(conversation)

    conversation.apply_row(
        rows("session.message_appended", run_id=RUN, message=message("user", "also this"))
    )

    assert ["you> also this  (queued for the run)"] == queued
    assert ["you> also this"] == texts(conversation)


def test_a_send_answered_after_its_run_ended_does_not_mark_the_run_working() -> None:
    """The rows of a quick run may arrive before chat.send's answer: the run stays ended."""
    conversation, rows = Conversation(SESSION), Rows()
    conversation.sending("k1", "hi")
    conversation.apply_row(rows("session.run_started", run_id=RUN, client_run_id="k1"))
    conversation.apply_row(rows("session.run_ended", run_id=RUN, reason="natural", detail=""))

    conversation.sent("k1", {"status": "started", "run_id": RUN})

    assert conversation.running is None


def test_a_tool_call_is_one_line_with_its_outcome_and_expands_to_its_result() -> None:
    """A call goes asked → running → success; expanded, it shows its arguments and result."""
    conversation, rows = Conversation(SESSION), Rows()
    run_with_a_read(conversation, rows)
    conversation.apply_row(rows("session.receipt_recorded", attempt_id=ATTEMPT, outcome="success"))
    conversation.apply_row(
        rows(
            "session.call_answered",
            run_id=RUN,
            call_id="c1",
            outcome="success",
            failed=False,
            not_run=None,
        )
    )
    result = message("tool", "the notes say hi", call_id="c1")
    conversation.apply_row(rows("session.message_appended", run_id=RUN, message=result))
    [call] = [e for e in conversation.entries if isinstance(e, ToolCall)]
    folded = render(call).plain

    conversation.toggle(call.key)

    assert '▸ read_file {"path":"/w/notes.md"}  success' == folded
    expanded = render(call).plain
    assert expanded.startswith("▾ read_file  success")
    assert '"path": "/w/notes.md"' in expanded
    assert "the notes say hi" in expanded


def test_a_call_skipped_by_steering_says_it_was_not_run() -> None:
    """call_answered with not_run names why the call did not run."""
    conversation, rows = Conversation(SESSION), Rows()
    asked = message("assistant", "", tool_calls=[read_call()])
    conversation.apply_row(rows("session.message_appended", run_id=RUN, message=asked))

    conversation.apply_row(
        rows(
            "session.call_answered",
            run_id=RUN,
            call_id="c1",
            not_run="steering",
            failed=True,
            outcome=None,
        )
    )

    [call] = [e for e in conversation.entries if isinstance(e, ToolCall)]
    assert "not run: steering" == call.status


def test_a_journaled_approval_request_opens_a_prompt_and_its_decision_closes_it() -> None:
    """approval_requested → a prompt with the call's tool and targets; approval_decided → gone."""
    conversation, rows = Conversation(SESSION), Rows()
    run_with_a_read(conversation, rows, approval=True)
    prompt = conversation.prompt(ATTEMPT)

    conversation.apply_row(
        rows(
            "session.approval_decided",
            attempt_id=ATTEMPT,
            verdict="approved",
            scope="once",
            decided_by="cli (local control)",
        )
    )

    assert prompt is not None
    assert ("read_file", ("/w/notes.md",), True) == (prompt.tool, prompt.targets, prompt.can_widen)
    assert conversation.prompt(ATTEMPT) is None
    [call] = [e for e in conversation.entries if isinstance(e, ToolCall)]
    assert ["approved (once) by cli (local control)"] == call.notes


def test_a_pushed_request_fills_in_the_same_prompt_and_a_resolution_hides_it_for_good() -> None:
    """A pushed request merges with the journaled one; once resolved it never returns."""
    conversation, rows = Conversation(SESSION), Rows()
    run_with_a_read(conversation, rows, approval=True)
    pushed = {
        "id": ATTEMPT,
        "session_id": SESSION,
        "tool": "read_file",
        "summary": "read it",
        "targets": ["/w/notes.md"],
        "can_widen": True,
        "session_scope_covers": "this chat",
    }

    conversation.apply_pushed("approval.requested", pushed)
    prompts = [e for e in conversation.entries if isinstance(e, ApprovalPrompt)]
    conversation.apply_pushed(
        "approval.resolved",
        {
            "id": ATTEMPT,
            "session_id": SESSION,
            "verdict": "rejected",
            "scope": "once",
            "decided_by": "someone",
        },
    )
    conversation.apply_pushed("approval.requested", pushed)
    [call] = [e for e in conversation.entries if isinstance(e, ToolCall)]
    before = list(call.notes)
    conversation.apply_row(
        rows(
            "session.approval_decided",
            attempt_id=ATTEMPT,
            verdict="rejected",
            scope="once",
            decided_by="someone",
        )
    )

    assert ["this chat"] == [p.covers for p in prompts]
    assert [] == [e for e in conversation.entries if isinstance(e, ApprovalPrompt)]
    assert ([], ["denied by someone"]) == (before, call.notes)


def test_a_prompt_pushed_before_the_calls_rows_is_answered_and_noted_once() -> None:
    """Pushes outrun the journal: the prompt shows at once; the journal's decision is noted."""
    conversation, rows = Conversation(SESSION), Rows()
    pushed = {
        "id": ATTEMPT,
        "session_id": SESSION,
        "tool": "read_file",
        "summary": "read it",
        "targets": ["/w/notes.md"],
        "can_widen": True,
    }
    conversation.apply_pushed("approval.requested", pushed)
    shown = [e for e in conversation.entries if isinstance(e, ApprovalPrompt)]
    conversation.answered(ATTEMPT, {"verdict": "approved", "scope": "session"})

    run_with_a_read(conversation, rows, approval=True)
    conversation.apply_row(
        rows(
            "session.approval_decided",
            attempt_id=ATTEMPT,
            verdict="approved",
            scope="session",
            decided_by="me",
        )
    )

    assert 1 == len(shown)
    assert [] == [e for e in conversation.entries if isinstance(e, ApprovalPrompt)]
    [call] = [e for e in conversation.entries if isinstance(e, ToolCall)]
    assert ["approved (session) by me"] == call.notes


def test_an_answer_refused_as_unknown_hides_the_prompt_and_another_refusal_shows_why() -> None:
    """unknown_approval means it was answered elsewhere; any other code stays shown with words."""
    conversation, rows = Conversation(SESSION), Rows()
    run_with_a_read(conversation, rows, approval=True)
    conversation.answering(ATTEMPT, "once")
    conversation.answer_refused(ATTEMPT, "bad_control_request", "bad request: directory")
    refused = conversation.prompt(ATTEMPT)
    problem = (refused.problem, refused.answering) if refused is not None else None

    conversation.answer_refused(ATTEMPT, "unknown_approval", "already decided")

    assert ("bad request: directory", None) == problem
    assert conversation.prompt(ATTEMPT) is None


def test_a_run_that_ends_otherwise_than_naturally_says_so_and_closes_its_prompts() -> None:
    """run_ended `abort` is a notice; a prompt of that run does not linger."""
    conversation, rows = Conversation(SESSION), Rows()
    run_with_a_read(conversation, rows, approval=True)

    conversation.apply_row(
        rows("session.run_ended", run_id=RUN, reason="abort", detail="the user aborted the run")
    )

    notices = [e.text for e in conversation.entries if isinstance(e, Notice)]
    assert ["run ended: abort: the user aborted the run"] == notices
    assert conversation.prompt(ATTEMPT) is None
    assert conversation.running is None


def test_an_attachment_is_one_line_with_what_is_known_of_it() -> None:
    """Sent: name, type, size and digest; received or refused: marked so; any other: its event."""
    conversation, rows = Conversation(SESSION), Rows()
    conversation.apply_row(
        rows(
            "session.attachment_sent",
            run_id=RUN,
            name="plot.png",
            media_type="image/png",
            size=2048,
            sha256="ab" * 32,
        )
    )
    conversation.apply_row(
        rows(
            "session.attachment_received",
            name="in.txt",
            sniffed_type="text/plain",
            size=3,
            accepted=True,
        )
    )
    conversation.apply_row(
        rows("session.attachment_received", name="x.exe", accepted=False, reason="type_not_allowed")
    )
    conversation.apply_row(rows("session.attachment_dropped", name="old.txt"))

    assert [
        "📎 plot.png (image/png, 2.0 KiB) sha256:abababababab",
        "📥 in.txt (text/plain, 3 B)",
        "📥 refused x.exe: type_not_allowed",
        "📎 old.txt  [session.attachment_dropped]",
    ] == [render(e).plain for e in conversation.entries if isinstance(e, Attachment)]


def test_a_prompt_offers_a_directory_only_when_it_can_be_widened_and_names_paths() -> None:
    """Once and deny always; this session and this directory for a request with a grant key."""
    narrow = ApprovalPrompt("a", "att_1", "shell", "rm x", ("/w/x",), can_widen=False)
    pathless = ApprovalPrompt("b", "att_2", "fetch", "get", (), can_widen=True)
    wide = ApprovalPrompt("c", "att_3", "write_file", "w", ("/w/a/x", "/w/b/y"), can_widen=True)

    assert [Choice.ONCE, Choice.DENY] == choices(narrow)
    assert [Choice.ONCE, Choice.SESSION, Choice.DENY] == choices(pathless)
    assert [Choice.ONCE, Choice.SESSION, Choice.DIRECTORY, Choice.DENY] == choices(wide)
    assert "/w" == common_parent(wide.targets)
    assert "/w/a" == common_parent(("/w/a/x",))


def test_an_answer_uses_approvals_resolve_and_falls_back_to_decide() -> None:
    """`resolve` takes the choice as it is; `decide` gets the same meaning as verdict and scope."""
    prompt = ApprovalPrompt("c", "att_3", "write_file", "w", ("/w/a/x",), can_widen=True)
    both = frozenset({"approvals.resolve", "approvals.decide"})

    resolved = answer_request(prompt, Choice.DIRECTORY, both)
    decided = answer_request(prompt, Choice.DIRECTORY, frozenset({"approvals.decide"}))
    denied = answer_request(prompt, Choice.DENY, frozenset({"approvals.decide"}))

    assert ("approvals.resolve", {"id": "att_3", "decision": "directory", "directory": "/w/a"}) == (
        resolved
    )
    assert (
        "approvals.decide",
        {"id": "att_3", "verdict": "approved", "scope": "directory", "directory": "/w/a"},
    ) == decided
    assert ("approvals.decide", {"id": "att_3", "verdict": "rejected", "scope": "once"}) == denied


def test_an_answer_not_offered_is_refused() -> None:
    """A prompt that cannot be widened refuses `session`."""
    prompt = ApprovalPrompt("a", "att_1", "shell", "rm x", ("/w/x",), can_widen=False)

    with pytest.raises(ValueError, match="not offered"):
        answer_request(prompt, Choice.SESSION, frozenset({"approvals.resolve"}))


def test_the_status_line_names_the_session_the_link_and_the_work() -> None:
    """Connected and idle, then reconnecting with the next attempt's delay."""
    conversation = Conversation(SESSION)
    conversation.linked(again=False)
    up = status_line(conversation)

    conversation.unlinked("nothing listens", 2, 0.4)

    assert f"{SESSION}  ·  connected  ·  idle" == up
    assert "reconnecting (attempt 2, in 0.4 s): nothing listens" in status_line(conversation)


def test_long_arguments_are_cut_in_the_middle() -> None:
    """A long text keeps its head and tail around an ellipsis."""
    assert "abc…xyz" == cut("abcdefghijklmnopqrstuvwxyz", 7)
    assert "short" == cut("short", 7)


def test_a_notice_is_not_read_as_markup() -> None:
    """Brackets in what the daemon says are shown as they are."""
    conversation = Conversation(SESSION)

    conversation.note("[bold]not bold[/bold]")

    assert ["[bold]not bold[/bold]"] == texts(conversation)
    assert all(isinstance(e, Notice | Said) for e in conversation.entries)
