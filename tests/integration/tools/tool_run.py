"""Real `ToolRun`s for tool tests: one trusted root, real path decisions, no dispatcher.

`make_run(root, {"path": "notes.txt"})` binds targets the way the dispatcher does (relative
to `root`, `~` expanded, facts gathered from the filesystem, decided against a root at `root`
that allows every operation) and raises `TargetDeniedError` if one is denied.
`invoke(tool, {"path": "notes.txt"}, root)` goes one step further: it validates the
arguments with the tool's model, asks `assess` for the targets, binds them and runs the tool.
Tests that build their own `ToolRun` (another base, temporary directory or environment) bind
each target with `bind_target` and decide paths with `path_check`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from adapters.fs.facts import expand_user, gather_facts, real_directory
from adapters.tools.contract import BoundTarget, PathTarget, Tool, ToolOutput, ToolRun
from domain.authorization.facts import canonical
from domain.authorization.path_access import PathAccessDecision, PathAllowed, decide_path
from domain.authorization.relative_base import join_base
from domain.authorization.roots import ALL_OPERATIONS, ProtectedPaths, RootKind, TrustedRoot
from domain.ids import CallId, RunId, SessionId
from domain.tools.exposure import Visibility
from domain.values.authorization import FileOperation

TargetSpec = str | tuple[str, FileOperation]
"""A raw path (read) or a raw path with the operation it needs."""


PathCheck = Callable[[str, FileOperation], PathAccessDecision]
"""What `ToolRun.check_path` is."""


class TargetDeniedError(AssertionError):
    """A target the test expected to be allowed was denied."""


def trusted_root(root: Path) -> TrustedRoot:
    """A project root at `root` that allows every file operation."""
    return TrustedRoot(
        path=canonical(str(root)),
        real=real_directory(canonical(str(root))),
        kind=RootKind.PROJECT,
        operations=ALL_OPERATIONS,
    )


def path_check(root: Path, protected: ProtectedPaths | None = None) -> PathCheck:
    """The dispatcher's decision function for one root and the given protected paths."""
    roots = (trusted_root(root),)
    shield = protected or ProtectedPaths()

    def check(path: str, operation: FileOperation) -> PathAccessDecision:
        return decide_path(gather_facts(canonical(path)), operation, roots, shield)

    return check


def bind_target(target: PathTarget, base: str, check: PathCheck) -> BoundTarget:
    """`target` resolved against `base` and bound, as the dispatcher does; it must be allowed."""
    absolute = join_base(target.raw, base)
    assert absolute is not None
    decision = check(canonical(absolute), target.operation)
    assert isinstance(decision, PathAllowed), decision
    return BoundTarget(
        argument=target.argument,
        raw=target.raw,
        path=decision.path,
        real=decision.real,
        operation=target.operation,
    )


def make_run(
    root: Path,
    targets: Mapping[str, TargetSpec] | None = None,
    *,
    protected: ProtectedPaths | None = None,
    visibility: Callable[[str], Visibility | None] | None = None,
    read_spill: Callable[[str, int, int], tuple[str, int | None, int] | None] | None = None,
) -> ToolRun:
    """A run whose targets are bound as the dispatcher binds them, relative to `root`.

    `visibility` and `read_spill` default to "no such tool" and "no such spill".
    """
    check = path_check(root, protected)
    bound: dict[str, BoundTarget] = {}
    for argument, spec in (targets or {}).items():
        raw, operation = (spec, FileOperation.READ) if isinstance(spec, str) else spec
        absolute = canonical(str(root / expand_user(raw)))
        decision = check(absolute, operation)
        if not isinstance(decision, PathAllowed):
            msg = f"{argument}={raw!r} denied: {decision.detail}"
            raise TargetDeniedError(msg)
        bound[argument] = BoundTarget(
            argument=argument,
            raw=raw,
            path=decision.path,
            real=decision.real,
            operation=operation,
        )
    return ToolRun(
        call_id=CallId("call_test"),
        session_id=SessionId.new(),
        run_id=RunId.new(),
        targets=bound,
        base=root,
        tmp_dir=root,
        environment={"TMPDIR": str(root), "TMP": str(root), "TEMP": str(root)},
        check_path=check,
        visibility=visibility or (lambda _name: None),
        read_spill=read_spill or (lambda _call, _offset, _size: None),
    )


async def invoke(
    tool: Tool,
    arguments: Mapping[str, Any],
    root: Path,
    *,
    protected: ProtectedPaths | None = None,
) -> ToolOutput:
    """Validate `arguments`, bind the targets `assess` names and run `tool` in `root`."""
    parsed = tool.arguments.model_validate(dict(arguments))
    assessment = tool.assess(parsed)
    specs = {t.argument: (t.raw, t.operation) for t in assessment.targets}
    return await tool.run(parsed, make_run(root, specs, protected=protected))
