"""The `shell_execute` tool: one `/bin/sh -c` command in its own process group; adapter layer.

Every path the command names, and its working directory, is checked as a write before it
runs. The command leads a new process group, so a timeout or a cancellation stops it and
everything it started in the background; after a normal exit the group is killed too, so no
child outlives the call. Output is captured up to a fixed size; the rest is drained unseen.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import signal
import stat
import time
from subprocess import DEVNULL, PIPE, STDOUT
from typing import ClassVar

import anyio
from anyio.abc import ByteReceiveStream, Process
from pydantic import Field

from adapters.sandbox.sandbox import Sandbox, SandboxRefusedError
from adapters.tools.contract import Arguments, CallAssessment, PathTarget, ToolOutput, ToolRun
from domain.shell.policy import ShellPolicy, assess_command
from domain.tools.definition import Concurrency, Loading, ToolDefinition, ToolEffects
from domain.tools.output import REDACTED, redact, redact_cut, redact_path
from domain.values.audience import Audience
from domain.values.authorization import ApprovalMode, DenialCategory, FileOperation
from domain.values.receipts import SHELL_CANDIDATES_LIMIT, InputProblem, OutcomeCategory, ShellRun

SHELL = "/bin/sh"
MAX_COMMAND = 65_536
DEFAULT_TIMEOUT = 60
MAX_TIMEOUT = 600
CAPTURE_LIMIT = 4 * 1024 * 1024
"""Bytes of output kept; more is read and dropped so the command never blocks on a full pipe."""
TERMINATE_GRACE = 2.0
"""Seconds a timed-out command has between SIGTERM and SIGKILL (and a killed one to exit)."""
DRAIN_GRACE = 2.0
"""Seconds to wait for the output pipe to close once the process group is gone."""
READ_CHUNK = 65_536
CWD_ARGUMENT = "cwd"
REDACTED_PATH = f"/{REDACTED}"
"""The working directory a receipt shows when redacting a secret leaves no canonical path."""


DEFAULT_AUDIENCE = Audience.PERSONAL
"""The audience whose network setting decides, before a call is bound, whether `required`
refuses every command; each run checks its own audience again."""

HARMLESS_DEVICES = frozenset(
    {"/dev/null", "/dev/zero", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty"}
)
"""Device files a command may name freely: writing to them changes no file."""


def _subject(arguments: ShellArguments) -> str:
    """What a standing approval of this command covers: its exact text.

    The dispatcher adds the real working directory to it.
    """
    return arguments.command


def _from_cwd(raw: str, cwd: str | None) -> str:
    """A command's relative path as the shell will resolve it: from the working directory."""
    if cwd is None or raw.startswith(("/", "~")):
        return raw
    return posixpath.join(cwd, raw)


class ShellArguments(Arguments):
    """Arguments of `shell_execute`."""

    command: str = Field(
        min_length=1,
        max_length=MAX_COMMAND,
        description="The command line, run by /bin/sh -c. Standard input is empty.",
    )
    timeout_seconds: int = Field(
        default=DEFAULT_TIMEOUT,
        ge=1,
        le=MAX_TIMEOUT,
        description=(
            "Seconds before the command and everything it started are stopped. When left "
            "out, the configured default applies."
        ),
    )
    cwd: str | None = Field(
        default=None,
        min_length=1,
        max_length=4096,
        description=(
            "The working directory: absolute, or relative to the project directory (else "
            "the session workspace). Defaults to that base directory."
        ),
    )


def command_target(index: int) -> str:
    """The argument name of the `index`-th path a command names."""
    return f"command:path:{index}"


class ShellExecute:
    """Run a shell command under the shell policy, with every named path checked as a write."""

    arguments: ClassVar[type[Arguments]] = ShellArguments
    definition: ClassVar[ToolDefinition] = ToolDefinition(
        name="shell_execute",
        title="Run shell command",
        description=(
            "Run a command with /bin/sh -c and return its combined stdout and stderr followed "
            "by a final line `exit code: N`. A non-zero exit code is reported, not raised. "
            "Every path the command names and the working directory must be writable under "
            "the session's trusted roots; commands the shell policy forbids are refused, and "
            "commands that cannot be analysed need operator approval. Background processes "
            "are stopped when the command ends or times out. Use the managed temporary "
            "directory in $TMPDIR for scratch files."
        ),
        parameters=ShellArguments.model_json_schema(),
        loading=Loading.CORE,
        concurrency=Concurrency.SEQUENTIAL,
        approval_mode=ApprovalMode.REQUEST,
        effects=ToolEffects(read_only=False, destructive=True, idempotent=False, open_world=True),
    )

    def __init__(
        self,
        policy: ShellPolicy,
        default_timeout: float = DEFAULT_TIMEOUT,
        max_timeout: float = MAX_TIMEOUT,
        *,
        terminate_grace: float = TERMINATE_GRACE,
        sandbox: Sandbox | None = None,
    ) -> None:
        if not 0 < default_timeout <= max_timeout:
            msg = "timeouts must satisfy 0 < default_timeout <= max_timeout"
            raise ValueError(msg)
        self._policy = policy
        self._default_timeout = default_timeout
        self._max_timeout = max_timeout
        self._grace = terminate_grace
        self.sandbox = Sandbox() if sandbox is None else sandbox

    def timeout(self, arguments: ShellArguments) -> float:
        """The effective timeout: the requested one, else the default, never above the maximum."""
        explicit = "timeout_seconds" in arguments.model_fields_set
        requested = arguments.timeout_seconds if explicit else self._default_timeout
        return min(requested, self._max_timeout)

    def assess(self, arguments: ShellArguments) -> CallAssessment:
        """Apply the shell policy and name the working directory and every path as writes."""
        found = assess_command(arguments.command, self._policy)
        cwd = PathTarget(
            argument=CWD_ARGUMENT, raw=arguments.cwd or ".", operation=FileOperation.WRITE
        )
        named = (
            PathTarget(
                argument=command_target(i),
                raw=_from_cwd(raw, arguments.cwd),
                operation=FileOperation.WRITE,
            )
            for i, raw in enumerate(found.paths)
            if raw not in HARMLESS_DEVICES
        )
        targets = (cwd, *named)
        summary = arguments.command
        refused = self.sandbox.refusal(DEFAULT_AUDIENCE)
        if refused is not None:
            return CallAssessment(
                targets=targets,
                deny=(DenialCategory.SANDBOX_UNAVAILABLE, _refusal_detail(refused)),
                summary=summary,
            )
        if found.hard_denied is not None:
            detail = f"the shell policy forbids this command: {found.hard_denied}"
            return CallAssessment(
                targets=targets, deny=(DenialCategory.SHELL_POLICY, detail), summary=summary
            )
        if not found.parsed:
            problem = found.problem or "the command could not be analysed"
            return CallAssessment(targets=targets, needs_approval=problem, summary=summary)
        return CallAssessment(
            targets=targets,
            reviewed_safe=found.reviewed_safe_phrase or "",
            grant_subject=_subject(arguments),
            summary=summary,
        )

    async def run(self, arguments: ShellArguments, run: ToolRun) -> ToolOutput:
        """Run the command in the checked working directory and report its output and exit."""
        cwd = run.targets[CWD_ARGUMENT]
        problem = _not_a_directory(cwd.real)
        if problem is not None:
            outcome, text = problem
            invalid = outcome is OutcomeCategory.INVALID_INPUT
            problems = (InputProblem(field=CWD_ARGUMENT, message=text),) if invalid else ()
            return ToolOutput(
                text=f"working directory {cwd.raw}: {text}", outcome=outcome, problems=problems
            )
        timeout = self.timeout(arguments)
        try:
            confined = self.sandbox.confine(
                [SHELL, "-c", arguments.command],
                roots=run.roots,
                protected=(*run.protected.files, *run.protected.trees),
                tmp_dir=run.tmp_dir,
                audience=run.audience,
                search_path=run.environment.get("PATH", ""),
            )
        except SandboxRefusedError as error:
            return ToolOutput(
                text=f"not run: {_refusal_detail(str(error))}",
                outcome=OutcomeCategory.ACCESS_DENIED,
            )
        capture = _Capture(CAPTURE_LIMIT, run.secrets)
        started = time.monotonic()
        process = await anyio.open_process(
            confined.argv,
            stdin=DEVNULL,
            stdout=PIPE,
            stderr=STDOUT,
            cwd=cwd.real,
            env=dict(run.environment),
            start_new_session=True,
        )
        # With a new session the shell leads its own group, whose id is its pid.
        group = process.pid
        try:
            code = await _supervise(process, group, capture, timeout, self._grace)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await _kill_and_reap(process, group, self._grace)
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await process.aclose()
        facts = ShellRun(
            command=redact(arguments.command, run.secrets),
            cwd=redact_path(cwd.real, run.secrets) or REDACTED_PATH,
            exit_code=code,
            timed_out=code is None,
            duration_ms=round((time.monotonic() - started) * 1000),
            output_bytes=capture.total,
            candidates=_candidates(run),
        )
        return _report(capture, code, timeout).model_copy(
            update={"shell": facts, "confinement": confined.confinement}
        )


class _Capture:
    """The first `limit` bytes of a stream, and how many bytes came in all."""

    def __init__(self, limit: int, secrets: frozenset[str] = frozenset()) -> None:
        self.limit = limit
        self.secrets = secrets
        self.kept = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]
        self.total += len(chunk)

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        if self.total > len(self.kept):
            # The byte bound may have cut through a secret: redact, and hide its start.
            text, _ = redact_cut(text, len(text), self.secrets)
            note = f"[output truncated: kept the first {len(self.kept)} of {self.total} bytes]"
            text = _line_end(text) + note
        return text


async def _supervise(
    process: Process, group: int, capture: _Capture, seconds: float, grace: float
) -> int | None:
    """Wait for the command and drain its output; the exit code, or None after a timeout."""
    stdout = process.stdout
    if stdout is None:  # pragma: no cover - opened with stdout=PIPE
        msg = "the shell was started without an output pipe"
        raise RuntimeError(msg)
    drained = anyio.Event()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_drain, stdout, capture, drained)
        code: int | None = None
        with anyio.move_on_after(seconds):
            code = await process.wait()
        if code is None:
            await _terminate(process, group, grace)
        else:
            # The shell is done; anything it left running in the background goes too.
            _signal_group(group, signal.SIGKILL)
        # A process that left the group may still hold the pipe; do not wait on it forever.
        with anyio.move_on_after(DRAIN_GRACE):
            await drained.wait()
        tasks.cancel_scope.cancel()
    return code


async def _drain(stream: ByteReceiveStream, capture: _Capture, drained: anyio.Event) -> None:
    try:
        while True:
            try:
                chunk = await stream.receive(READ_CHUNK)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
            capture.add(chunk)
    finally:
        drained.set()


async def _terminate(process: Process, group: int, grace: float) -> None:
    """SIGTERM the group, give it a grace period, then SIGKILL it and reap the shell."""
    _signal_group(group, signal.SIGTERM)
    with anyio.move_on_after(grace):
        await process.wait()
    _signal_group(group, signal.SIGKILL)
    await process.wait()


async def _kill_and_reap(process: Process, group: int, grace: float) -> None:
    _signal_group(group, signal.SIGKILL)
    with anyio.move_on_after(grace):
        await process.wait()


def _signal_group(group: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signum)


def _refusal_detail(reason: str) -> str:
    return (
        f"shell commands cannot be confined here: {reason}; the file tools still work, and "
        'an operator may set [tools.shell] sandbox = "best_effort" or "off" in config.toml'
    )


def _candidates(run: ToolRun) -> tuple[str, ...]:
    """The real paths the policy checked as writes, working directory first, redacted."""
    cwd = run.targets[CWD_ARGUMENT].real
    named = (t.real for name, t in run.targets.items() if name != CWD_ARGUMENT)
    shown = (redact_path(path, run.secrets) for path in (cwd, *named))
    return tuple(dict.fromkeys(p for p in shown if p is not None))[:SHELL_CANDIDATES_LIMIT]


def _not_a_directory(real: str) -> tuple[OutcomeCategory, str] | None:
    try:
        mode = os.stat(real).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return OutcomeCategory.NOT_FOUND, "no such directory"
    if not stat.S_ISDIR(mode):
        return OutcomeCategory.INVALID_INPUT, "not a directory"
    return None


def _report(capture: _Capture, code: int | None, timeout: float) -> ToolOutput:
    text = capture.text()
    if code is None:
        return ToolOutput(
            text=_line_end(text) + f"timed out after {timeout:g} s",
            outcome=OutcomeCategory.TRANSIENT_FAILURE,
        )
    if code < 0:
        text = _line_end(text) + f"terminated by signal {_signal_name(-code)}"
    return ToolOutput(text=_line_end(text) + f"exit code: {code}")


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)


def _line_end(text: str) -> str:
    """`text` ending with a newline, unless it is empty."""
    return text if not text or text.endswith("\n") else text + "\n"
