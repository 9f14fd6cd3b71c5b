"""Shell commands confined by the kernel: approved commands still cannot leave their roots.

Each command here is approved, so the policy lets it through; what stops it is Landlock,
and each ends with the command's own permission error and nothing changed.
"""

from __future__ import annotations

import socket
from dataclasses import replace
from pathlib import Path

import pytest

from adapters.sandbox.launch import abi_version
from adapters.settings.tools import NetworkAccess, RootSetting, ShellSettings, ToolSettings
from adapters.tools.shell import ShellExecute
from domain.session.events import ToolReceiptRecorded
from domain.shell.confinement import SandboxMode
from domain.values.audience import Audience
from domain.values.authorization import DenialCategory, FileOperation
from domain.values.receipts import OutcomeCategory
from tests.pipeline import Pipeline, approving, make_pipeline

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(abi_version() < 4, reason="needs Landlock ABI 4 (TCP rules)"),
]

ALL = tuple(FileOperation)
PYTHON = "python3"


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    """A trusted root with ok.txt, and a directory outside it with a secret."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "ok.txt").write_text("fine\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside-secret\n")
    return {"root": root, "outside": outside}


def _pipeline(
    tmp_path: Path,
    root: Path,
    *,
    mode: SandboxMode = SandboxMode.REQUIRED,
    network: NetworkAccess | dict[Audience, NetworkAccess] = NetworkAccess.DENY,
    root_path: Path | None = None,
) -> Pipeline:
    settings = ToolSettings(
        roots=(
            RootSetting(path=str(root_path or root), operations=ALL, audiences=tuple(Audience)),
        ),
        shell=ShellSettings(sandbox=mode, network=network),
    )
    return make_pipeline(tmp_path, settings=settings, approver=approving())


def _hidden(path: Path) -> str:
    """`path` as the shell computes it at run time, where no policy can see it."""
    return f'"$(printf %s {path})"'


def _pretend_abi(pipeline: Pipeline, abi: int) -> None:
    """Make the shell tool act as on a kernel offering Landlock ABI `abi` (0: none)."""
    shell = pipeline.dispatcher.tools.get("shell_execute")
    assert isinstance(shell, ShellExecute)
    shell.sandbox = replace(shell.sandbox, abi=abi)


async def _shell(pipeline: Pipeline, root: Path, command: str) -> tuple[str, ToolReceiptRecorded]:
    result = await pipeline.call("shell_execute", command=command, cwd=str(root))
    names = [type(event).short_name() for event in pipeline.events()]
    assert "session.receipt_recorded" == names[-1], result.text
    receipt = pipeline.events()[-1]
    assert isinstance(receipt, ToolReceiptRecorded)
    return result.text, receipt


async def test_an_approved_program_cannot_read_the_secret_store(
    tmp_path: Path, places: dict[str, Path]
) -> None:
    """python3 -c opening secrets.toml ends with its own permission error."""
    pipeline = _pipeline(tmp_path, places["root"])
    secrets = pipeline.home.secrets
    secrets.write_text('token = "s3cr3t-value-123"\n')
    secrets.chmod(0o600)
    code = f"print(open({str(secrets)!r}).read()[::-1])"
    text, receipt = await _shell(pipeline, places["root"], f'{PYTHON} -c "{code}"')
    pipeline.close()

    assert "PermissionError" in text
    assert "321-eulav" not in text
    assert receipt.confinement is not None
    assert receipt.confinement.confined


async def test_an_approved_command_cannot_write_outside_its_root(
    tmp_path: Path, places: dict[str, Path]
) -> None:
    """Writing and removing outside the root are refused by the kernel; nothing changes."""
    pipeline = _pipeline(tmp_path, places["root"])
    outside = places["outside"]
    text, _ = await _shell(
        pipeline,
        places["root"],
        f"echo x > {_hidden(outside / 'written.txt')}; rm {_hidden(outside / 'secret.txt')}; "
        f"cat {_hidden(outside / 'secret.txt')}",
    )
    pipeline.close()

    assert "Permission denied" in text
    assert not (outside / "written.txt").exists()
    assert "outside-secret\n" == (outside / "secret.txt").read_text()
    assert "outside-secret" not in text


async def test_the_command_still_works_inside_its_root(
    tmp_path: Path, places: dict[str, Path]
) -> None:
    """Inside the root the command reads, writes and uses the managed temp directory."""
    pipeline = _pipeline(tmp_path, places["root"])
    text, receipt = await _shell(
        pipeline,
        places["root"],
        'cat ok.txt && echo made > new.txt && echo t > "$TMPDIR/t" && cat "$TMPDIR/t"',
    )
    pipeline.close()

    assert "fine\nt\nexit code: 0" == text
    assert "made\n" == (places["root"] / "new.txt").read_text()
    assert receipt.confinement is not None
    assert SandboxMode.REQUIRED is receipt.confinement.mode
    assert receipt.confinement.rules_digest is not None
    assert len(receipt.confinement.rules_digest) == 64


async def test_children_of_the_command_inherit_the_sandbox(
    tmp_path: Path, places: dict[str, Path]
) -> None:
    """A nested shell and a background child are confined as well."""
    pipeline = _pipeline(tmp_path, places["root"])
    secret = _hidden(places["outside"] / "secret.txt")
    text, _ = await _shell(
        pipeline, places["root"], f"sh -c 'cat {secret}'; (cat {secret} &) ; wait; sleep 0.2"
    )
    pipeline.close()

    assert 2 == text.count("Permission denied")
    assert "outside-secret" not in text


def _listener() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    return server


async def test_network_is_denied_by_default(tmp_path: Path, places: dict[str, Path]) -> None:
    """Connecting to a TCP port on 127.0.0.1 ends with a permission error."""
    pipeline = _pipeline(tmp_path, places["root"])
    with _listener() as server:
        port = server.getsockname()[1]
        code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)"
        text, receipt = await _shell(pipeline, places["root"], f'{PYTHON} -c "{code}"')
    pipeline.close()

    assert "PermissionError" in text
    assert receipt.confinement is not None
    assert not receipt.confinement.network


async def test_network_allow_opens_tcp_for_the_named_audience(
    tmp_path: Path, places: dict[str, Path]
) -> None:
    """With network allowed for the session's audience, the same connection succeeds."""
    pipeline = _pipeline(tmp_path, places["root"], network={Audience.PERSONAL: NetworkAccess.ALLOW})
    with _listener() as server:
        port = server.getsockname()[1]
        code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)"
        text, receipt = await _shell(pipeline, places["root"], f'{PYTHON} -c "{code}"')
    pipeline.close()

    assert text.endswith("exit code: 0")
    assert receipt.confinement is not None
    assert receipt.confinement.network


async def test_a_root_holding_the_home_is_carved_around_it(tmp_path: Path) -> None:
    """A root that contains the home allows its other entries; the home stays unreadable."""
    pipeline = _pipeline(tmp_path, tmp_path, root_path=tmp_path)
    pipeline.home.secrets.write_text('token = "carved-secret-1"\n')
    pipeline.home.secrets.chmod(0o600)
    (tmp_path / "notes.txt").write_text("visible\n")
    text, receipt = await _shell(
        pipeline,
        tmp_path,
        f"cat notes.txt; cat {_hidden(pipeline.home.secrets)}; ls {_hidden(pipeline.home.root)}",
    )
    pipeline.close()

    assert "visible" in text
    assert 2 == text.count("Permission denied")
    assert receipt.confinement is not None
    assert (str(tmp_path),) == receipt.confinement.carved


async def test_off_runs_unconfined_and_says_so(tmp_path: Path, places: dict[str, Path]) -> None:
    """With the sandbox off, the receipt records an unconfined command."""
    pipeline = _pipeline(tmp_path, places["root"], mode=SandboxMode.OFF)
    secret = _hidden(places["outside"] / "secret.txt")
    text, receipt = await _shell(pipeline, places["root"], f"cat {secret}")
    pipeline.close()

    assert "outside-secret" in text
    assert receipt.confinement is not None
    assert not receipt.confinement.confined
    assert SandboxMode.OFF is receipt.confinement.mode


async def test_required_without_landlock_denies_with_a_remedy(
    tmp_path: Path, places: dict[str, Path]
) -> None:
    """On a kernel without Landlock, `required` denies before anything runs."""
    pipeline = _pipeline(tmp_path, places["root"])
    _pretend_abi(pipeline, 0)
    marker = places["root"] / "ran.txt"
    result = await pipeline.call(
        "shell_execute", command=f"touch {marker}", cwd=str(places["root"])
    )
    pipeline.close()

    assert DenialCategory.SANDBOX_UNAVAILABLE is result.denial
    assert "no Landlock" in result.text
    assert 'sandbox = "best_effort"' in result.text
    assert not marker.exists()


async def test_best_effort_without_landlock_runs_and_records_the_gap(
    tmp_path: Path, places: dict[str, Path]
) -> None:
    """`best_effort` on a kernel without Landlock runs unconfined and names what was missing."""
    pipeline = _pipeline(tmp_path, places["root"], mode=SandboxMode.BEST_EFFORT)
    _pretend_abi(pipeline, 0)
    text, receipt = await _shell(pipeline, places["root"], "echo ran")
    pipeline.close()

    assert "ran\nexit code: 0" == text
    assert OutcomeCategory.SUCCESS is receipt.outcome
    assert receipt.confinement is not None
    assert not receipt.confinement.confined
    assert ("Landlock (the command ran unconfined)",) == receipt.confinement.missing


async def test_best_effort_on_an_old_abi_confines_and_lists_the_gaps(
    tmp_path: Path, places: dict[str, Path]
) -> None:
    """On ABI 3 the command is confined for files and the receipt names the missing rights."""
    pipeline = _pipeline(tmp_path, places["root"], mode=SandboxMode.BEST_EFFORT)
    _pretend_abi(pipeline, 3)
    with _listener() as server:
        port = server.getsockname()[1]
        code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)"
        secret = _hidden(places["outside"] / "secret.txt")
        command = f'cat {secret}; {PYTHON} -c "{code}" && echo connected'
        text, receipt = await _shell(pipeline, places["root"], command)
    pipeline.close()

    assert "Permission denied" in text
    assert "connected" in text
    assert receipt.confinement is not None
    assert receipt.confinement.confined
    assert "TCP bind and connect (ABI 4)" in receipt.confinement.missing
