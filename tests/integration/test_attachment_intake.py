"""Files sent with a message, admitted against a real journal and real directories.

The staging area, the checks, the one commit that starts the run with the decisions, and the
move into the inbox; what a failure at each step leaves behind; the sniffer on real archives;
the `[attachments]` configuration; and the gateway frame that must carry a full load.
"""

from __future__ import annotations

import gzip
import io
import math
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.config.loading import load_config
from adapters.control.plane import MAX_FRAME_BYTES
from adapters.errors import ConfigError
from adapters.fs import anchored
from adapters.fs.envelope import Envelope, bind_envelope, envelope_root
from adapters.fs.sniffing import sniff
from adapters.journal.journal import SqliteJournal
from adapters.runtime.attachments import (
    Admission,
    AttachmentStorageError,
    Upload,
    start_run_with_attachments,
)
from adapters.settings.attachments import AttachmentSettings
from domain.attachments.admission import MAX_ATTACHMENT_BYTES, AttachmentLimits
from domain.attachments.records import MAX_CLAIMED_NAME
from domain.ids import SessionId
from domain.session.errors import SessionClosedError
from domain.session.events import AttachmentReceived, RunStarted, WriterClaimed
from domain.session.opening import SessionOpening
from domain.values.audience import Audience, SessionKind
from domain.values.runs import SessionCloseReason

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 32
ELF = b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 56


def zipped() -> bytes:
    """A real zip archive holding one text file."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("inner.txt", "hello")
    return buffer.getvalue()


def tarred() -> bytes:
    """A real tar archive holding one text file."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        info = tarfile.TarInfo("inner.txt")
        info.size = 5
        archive.addfile(info, io.BytesIO(b"hello"))
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("data", "media_type", "kind"),
    [
        (zipped(), "application/zip", "archive"),
        (tarred(), "application/x-tar", "archive"),
        (gzip.compress(b"hello"), "application/gzip", "archive"),
        (PNG, "image/png", "image"),
        (ELF, "application/x-executable", "executable"),
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "application/pdf", "document"),
        (b"name,qty\nbolt,4\n", "text/plain", "text"),
    ],
    ids=["zip", "tar", "gzip", "png", "elf", "pdf", "csv"],
)
def test_the_sniffer_names_real_files_by_their_content(
    data: bytes, media_type: str, kind: str
) -> None:
    """The library's signatures and the domain's rules together name each real file."""
    sniffed = sniff(data)
    assert (media_type, kind) == (sniffed.media_type, str(sniffed.kind))


class Intake:
    """A journal with one open gateway-style session, and its envelope."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.journal = SqliteJournal(root / "ledgerclaw.db")
        self.session_id = SessionId.new()
        Envelope(envelope_root(self.home, self.session_id).resolve()).create()
        opening = SessionOpening(
            self.session_id, "gateway:test", SessionKind.MAIN, Audience.PERSONAL
        )
        self.journal.open_session(opening)
        self.envelope = bind_envelope(self.journal, self.home, self.session_id)

    def send(self, *uploads: Upload, limits: AttachmentLimits | None = None) -> Admission:
        """Send `uploads` with the text `look`."""
        return start_run_with_attachments(
            self.journal,
            self.home,
            self.session_id,
            client_run_id=None,
            text="look",
            uploads=uploads,
            limits=limits or AttachmentLimits(),
        )

    def events(self) -> list[object]:
        """The session's events, in order."""
        return list(self.journal.app.events.get(self.session_id.as_uuid()))

    @property
    def inbox(self) -> Path:
        """The workspace inbox."""
        return self.envelope.workspace / "inbox"

    def staged(self) -> list[str]:
        """What is left in the staging area."""
        return sorted(p.name for p in self.envelope.attachment_staging.iterdir())


@pytest.fixture
def intake(tmp_path: Path) -> Iterator[Intake]:
    """A fresh session to send files to."""
    made = Intake(tmp_path)
    yield made
    made.journal.close()


def test_the_decisions_are_journaled_with_the_runs_start_and_only_admitted_files_move(
    intake: Intake,
) -> None:
    """run_started, writer_claimed, then one attachment_received per file; staging is empty."""
    admission = intake.send(
        Upload("chart.png", "image/png", PNG), Upload("tool", "application/octet-stream", ELF)
    )

    events = intake.events()
    start = next(i for i, e in enumerate(events) if isinstance(e, RunStarted))
    kinds = [type(e) for e in events[start:]]
    assert [RunStarted, WriterClaimed, AttachmentReceived, AttachmentReceived] == kinds
    png, elf = events[start + 2 :]
    assert isinstance(png, AttachmentReceived)
    assert isinstance(elf, AttachmentReceived)
    assert (True, "accepted", str(intake.inbox / "chart.png")) == (
        png.accepted,
        str(png.reason),
        png.path,
    )
    assert (False, "executable", None) == (elf.accepted, str(elf.reason), elf.path)
    assert ["chart.png"] == sorted(p.name for p in intake.inbox.iterdir())
    assert PNG == (intake.inbox / "chart.png").read_bytes()
    assert [] == intake.staged()
    assert admission.prompt.endswith(
        f"- {intake.inbox / 'chart.png'} (image/png, {len(PNG)} bytes)"
    )


def test_a_name_already_in_the_inbox_gets_a_suffix_and_nothing_is_replaced(
    intake: Intake,
) -> None:
    """Two sends of `notes.md` and a name with a path in it: three files, none overwritten."""
    intake.inbox.mkdir()
    (intake.inbox / "notes.md").write_text("mine")

    intake.send(Upload("notes.md", "text/markdown", b"# one\n"))
    intake.send(Upload("../../notes.md", "text/markdown", b"# two\n"))

    assert {"notes.md": "mine", "notes-2.md": "# one\n", "notes-3.md": "# two\n"} == {
        p.name: p.read_text() for p in intake.inbox.iterdir()
    }


def test_a_refused_commit_leaves_no_file_anywhere_and_nothing_journaled(
    intake: Intake,
) -> None:
    """A closed session refuses the run: staging is emptied and the inbox stays empty."""
    intake.journal.update_session(
        intake.session_id, lambda s: s.close(SessionCloseReason.CLIENT_CLOSED)
    )
    before = len(intake.events())

    with pytest.raises(SessionClosedError):
        intake.send(Upload("a.png", "image/png", PNG))

    assert before == len(intake.events())
    assert [] == intake.staged()
    assert not intake.inbox.exists() or [] == list(intake.inbox.iterdir())


def test_an_inbox_that_is_a_link_is_refused_before_anything_is_journaled(
    intake: Intake, tmp_path: Path
) -> None:
    """A session that made workspace/inbox a link gets a typed error; nothing lands outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    intake.inbox.symlink_to(outside, target_is_directory=True)
    before = len(intake.events())

    with pytest.raises(AttachmentStorageError):
        intake.send(Upload("a.png", "image/png", PNG))

    assert (before, [], []) == (len(intake.events()), list(outside.iterdir()), intake.staged())


def test_leftovers_of_a_crashed_send_are_cleared_from_staging(intake: Intake) -> None:
    """A file a crash left in staging is removed by the next send, never admitted."""
    (intake.envelope.attachment_staging / "fil_leftover").write_bytes(ELF)

    intake.send(Upload("a.txt", "text/plain", b"hi"))

    assert [] == intake.staged()
    assert ["a.txt"] == [p.name for p in intake.inbox.iterdir()]


def test_a_write_that_fails_leaves_no_partial_file(tmp_path: Path) -> None:
    """`write_new` over an existing name fails whole: the old file stays, no temporary."""
    with anchored.directory(str(tmp_path / "d")) as fd:
        anchored.write_new(fd, "x", b"first")
        with pytest.raises(FileExistsError):
            anchored.write_new(fd, "x", b"second")
        assert ["x"] == anchored.names(fd)
    assert b"first" == (tmp_path / "d" / "x").read_bytes()


# -- configuration and the frame -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("max_cont = 3", "attachments.max_cont: unknown key (did you mean attachments.max_count?)"),
        ('allowed_types = ["png"]', "attachments.allowed_types: expected a media type or pattern"),
        ("max_file_bytes = 9000000", "attachments.max_file_bytes: expected an integer from 1 to"),
        ("allow_archives = 1", "attachments.allow_archives: expected"),
        (
            "max_file_bytes = 100\nmax_total_bytes = 50",
            "attachments: max_file_bytes (100) is larger than max_total_bytes (50)",
        ),
    ],
)
def test_the_attachments_section_is_validated_strictly(
    tmp_path: Path, text: str, expected: str
) -> None:
    """Unknown keys, bad patterns, caps over the ceiling and contradictions are refused."""
    path = tmp_path / "config.toml"
    path.write_text(f"[attachments]\n{text}\n")

    with pytest.raises(ConfigError) as refused:
        load_config(path)

    assert expected in str(refused.value)


def test_the_attachments_section_becomes_the_admission_rules(tmp_path: Path) -> None:
    """Patterns are lower-cased; the defaults are 8 files, 4 MiB each, 8 MiB a message."""
    path = tmp_path / "config.toml"
    path.write_text('[attachments]\nrefused_types = ["Image/SVG+xml"]\nallow_archives = true\n')

    limits = load_config(path).attachments.limits()

    assert (("image/svg+xml",), True) == (limits.refused_types, limits.allow_archives)
    assert (8, 4 << 20, 8 << 20) == (
        AttachmentSettings().max_count,
        AttachmentSettings().max_file_bytes,
        AttachmentSettings().max_total_bytes,
    )


def test_a_full_load_of_attachments_fits_one_gateway_frame() -> None:
    """8 MiB of files as base64, the longest text in 4-byte UTF-8 and 64 files' fields fit."""
    base64_bytes = 4 * math.ceil(MAX_ATTACHMENT_BYTES / 3)
    text_bytes = 200_000 * 4
    per_file = len('{"name": "", "media_type": "", "data": ""},') + MAX_CLAIMED_NAME * 4 + 255
    envelope = 1024  # the frame's own keys, the session id and a client run id

    assert base64_bytes + text_bytes + 64 * per_file + envelope < MAX_FRAME_BYTES
