"""`attach_file` through the governed pipeline: the Attach rules, the outbox copy, the event."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from adapters.home import Home
from adapters.runtime.attachments import (
    AttachmentUnavailableError,
    UnknownAttachmentError,
    fetch_attachment,
)
from adapters.tools.files.attach_file import AttachFile
from adapters.wiring.home import open_event_log
from domain.ids import AttachmentId
from domain.session.events import (
    AttachmentSent,
    AttemptDenied,
    PolicyEvaluated,
    ToolReceiptRecorded,
)
from domain.values.authorization import DenialCategory, FileOperation, PolicyDecision
from domain.values.receipts import OutcomeCategory
from tests.pipeline import Pipeline, make_pipeline

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 32


def sent_events(pipeline: Pipeline) -> list[AttachmentSent]:
    """The session's attachment_sent events."""
    return [e for e in pipeline.events() if isinstance(e, AttachmentSent)]


def fetch(home: Home, pipeline: Pipeline, attachment_id: str) -> dict[str, object]:
    """What `attachments.get` answers for the pipeline's session."""
    return fetch_attachment(
        open_event_log(home), pipeline.run.session_id, AttachmentId(attachment_id)
    )


async def test_a_file_in_the_artifacts_is_attached_copied_and_journaled(tmp_path: Path) -> None:
    """The receipt, then `attachment_sent`; the copy fetched is the bytes as they were."""
    pipeline = make_pipeline(tmp_path)
    chart = pipeline.run.envelope.artifacts / "chart.png"
    chart.write_bytes(PNG)

    result = await pipeline.call("attach_file", path=str(chart), name="Q3 chart.png")

    assert (OutcomeCategory.SUCCESS, False) == (result.outcome, result.is_error)
    [sent] = sent_events(pipeline)
    receipt = next(e for e in pipeline.events() if isinstance(e, ToolReceiptRecorded))
    assert receipt.attempt_id == sent.attempt_id
    assert receipt.originator_version < sent.originator_version
    assert ("Q3 chart.png", "image/png", len(PNG)) == (sent.name, sent.media_type, sent.size)
    assert (str(chart.resolve()), FileOperation.ATTACH) == (
        receipt.file_activity[0].path,
        receipt.file_activity[0].operation,
    )
    assert str(sent.attachment_id) in result.text
    chart.write_bytes(b"changed afterwards")
    fetched = fetch(pipeline.home, pipeline, sent.attachment_id)
    assert PNG == base64.b64decode(str(fetched["data"]))
    assert (sent.sha256, "image/png") == (fetched["sha256"], fetched["media_type"])


async def test_a_file_outside_the_artifacts_is_denied_attach_with_its_decision_journaled(
    tmp_path: Path,
) -> None:
    """The workspace allows reading and writing, not attaching: outside_roots, journaled."""
    pipeline = make_pipeline(tmp_path)
    notes = pipeline.workspace / "notes.txt"
    notes.write_text("private")

    result = await pipeline.call("attach_file", path="notes.txt")

    assert DenialCategory.OUTSIDE_ROOTS == result.denial
    decision = next(e for e in pipeline.events() if isinstance(e, PolicyEvaluated))
    denied = next(e for e in pipeline.events() if isinstance(e, AttemptDenied))
    assert PolicyDecision.DENY == decision.decision
    assert DenialCategory.OUTSIDE_ROOTS == denied.category
    assert "does not allow attach" in denied.detail
    assert [] == sent_events(pipeline)


async def test_a_configured_root_attaches_only_when_it_lists_attach(tmp_path: Path) -> None:
    """`operations = ["read", "attach"]` opens attaching there; a read-only root does not."""
    shared, readable = tmp_path / "shared", tmp_path / "readable"
    shared.mkdir()
    readable.mkdir()
    (shared / "report.md").write_text("# Report\n")
    (readable / "plan.md").write_text("# Plan\n")
    pipeline = make_pipeline(
        tmp_path,
        roots=[
            (shared, [FileOperation.READ, FileOperation.ATTACH]),
            (readable, [FileOperation.READ]),
        ],
    )

    attached = await pipeline.call("attach_file", path=str(shared / "report.md"))
    refused = await pipeline.call("attach_file", path=str(readable / "plan.md"))

    assert (OutcomeCategory.SUCCESS, DenialCategory.OUTSIDE_ROOTS) == (
        attached.outcome,
        refused.denial,
    )
    [sent] = sent_events(pipeline)
    assert ("report.md", "text/plain") == (sent.name, sent.media_type)


async def test_a_protected_file_is_denied_even_through_the_artifacts(tmp_path: Path) -> None:
    """A link in the artifacts to the home's config is protected, whatever the root grants."""
    pipeline = make_pipeline(tmp_path)
    pipeline.home.config.write_text("[tools]\n")
    link = pipeline.run.envelope.artifacts / "config.toml"
    link.symlink_to(pipeline.home.config)

    result = await pipeline.call("attach_file", path=str(link))

    denied = next(e for e in pipeline.events() if isinstance(e, AttemptDenied))
    assert (DenialCategory.PROTECTED_PATH, DenialCategory.PROTECTED_PATH) == (
        result.denial,
        denied.category,
    )


async def test_artifacts_made_a_link_out_of_the_session_attach_nothing(tmp_path: Path) -> None:
    """A session that points artifacts/ elsewhere cannot attach what it leads to."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not yours")
    pipeline = make_pipeline(tmp_path)
    artifacts = pipeline.run.envelope.artifacts
    artifacts.rmdir()
    artifacts.symlink_to(outside, target_is_directory=True)
    pipeline.run.roots = None  # as a later run would resolve them

    result = await pipeline.call("attach_file", path=str(artifacts / "secret.txt"))

    assert DenialCategory.LINK_BOUNDARY == result.denial
    assert [] == sent_events(pipeline)


async def test_a_file_over_the_attach_cap_is_invalid_input(tmp_path: Path) -> None:
    """A file larger than `max_attach_bytes` is refused and nothing is copied."""
    pipeline = make_pipeline(tmp_path)
    tool = pipeline.dispatcher.tools.get("attach_file")
    assert isinstance(tool, AttachFile)
    tool.max_bytes = 10
    big = pipeline.run.envelope.artifacts / "big.txt"
    big.write_text("x" * 11)

    result = await pipeline.call("attach_file", path=str(big))

    assert OutcomeCategory.INVALID_INPUT == result.outcome
    assert "at most 10" in result.text
    assert [] == sent_events(pipeline)
    assert not pipeline.run.envelope.outbox.exists()


async def test_an_unknown_or_changed_attachment_cannot_be_fetched(tmp_path: Path) -> None:
    """An id never attached is unknown; a copy changed since is unavailable."""
    pipeline = make_pipeline(tmp_path)
    note = pipeline.run.envelope.artifacts / "note.txt"
    note.write_text("hello")
    await pipeline.call("attach_file", path=str(note))
    [sent] = sent_events(pipeline)

    with pytest.raises(UnknownAttachmentError):
        fetch(pipeline.home, pipeline, str(AttachmentId.new()))
    copy = pipeline.run.envelope.outbox / str(sent.attachment_id)
    copy.chmod(0o600)
    copy.write_text("HELLO")
    with pytest.raises(AttachmentUnavailableError):
        fetch(pipeline.home, pipeline, sent.attachment_id)
