"""Benchmark of a shell call's cost with and without the Landlock sandbox, in the same run.

Run from the repository root: `.venv/bin/python bench/shell.py [--calls N] [--repeat R] [--quick]`.

Three cases, run in turns on fresh homes so each meets the same disk and cache conditions:

* pipeline, sandbox `off`: `Dispatcher.call` of `shell_execute` running `true` in a trusted
  root, journaled with durability `normal`;
* pipeline, sandbox `required`: the same call, confined by the launcher;
* bare process: `/bin/sh -c true` started and reaped by anyio, with no pipeline, the floor of
  any shell call.

Each figure is the median over the repeats, also handed to `bench/all.py` through
`figures.report`; nothing asserts a timing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from subprocess import DEVNULL

import anyio
from figures import report

from adapters.sandbox.launch import abi_version
from adapters.settings.journal import Durability, JournalSettings
from adapters.settings.tools import RootSetting, ShellSettings, ToolSettings
from domain.shell.confinement import SandboxMode
from domain.values.audience import Audience
from domain.values.authorization import FileOperation
from domain.values.receipts import OutcomeCategory

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.pipeline import Pipeline, approving, make_pipeline  # noqa: E402 - after the path


def _pipeline(directory: Path, mode: SandboxMode) -> tuple[Pipeline, Path]:
    root = directory / "root"
    root.mkdir()
    settings = ToolSettings(
        roots=(
            RootSetting(path=str(root), operations=tuple(FileOperation), audiences=tuple(Audience)),
        ),
        shell=ShellSettings(sandbox=mode, reviewed_safe=("true",)),
    )
    pipeline = make_pipeline(
        directory,
        settings=settings,
        approver=approving(),
        journal_settings=JournalSettings(durability=Durability.NORMAL),
    )
    return pipeline, root


async def _pipeline_calls(mode: SandboxMode, calls: int) -> float:
    with tempfile.TemporaryDirectory() as scratch:
        pipeline, root = _pipeline(Path(scratch), mode)
        try:
            started = time.perf_counter()
            for _ in range(calls):
                result = await pipeline.call("shell_execute", command="true", cwd=str(root))
                if result.outcome is not OutcomeCategory.SUCCESS:
                    msg = f"shell call failed: {result.text}"
                    raise RuntimeError(msg)
            return (time.perf_counter() - started) / calls
        finally:
            pipeline.close()


async def _bare_processes(calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        process = await anyio.open_process(["/bin/sh", "-c", "true"], stdin=DEVNULL)
        await process.wait()
        await process.aclose()
    return (time.perf_counter() - started) / calls


def main() -> None:
    """Measure, then print one line per case and the sandbox's cost against `off`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per case and repeat")
    parser.add_argument("--repeat", type=int, default=3, help="repeats; the median is printed")
    parser.add_argument("--quick", action="store_true", help="10 calls, 1 repeat: a smoke check")
    args = parser.parse_args()
    calls, repeat = (10, 1) if args.quick else (args.calls, args.repeat)
    abi = abi_version()
    cases: dict[str, Callable[[], Awaitable[float]]] = {
        "bare /bin/sh -c true": lambda: _bare_processes(calls),
        "pipeline, sandbox off": lambda: _pipeline_calls(SandboxMode.OFF, calls),
    }
    if abi >= 4:
        cases["pipeline, sandbox required"] = lambda: _pipeline_calls(SandboxMode.REQUIRED, calls)
    timings: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, case in cases.items():
            timings[name].append(anyio.run(case))
    medians = {name: statistics.median(values) for name, values in timings.items()}
    baseline = medians["pipeline, sandbox off"]
    print(f"shell calls: {calls} per case, median of {repeat}; Landlock ABI {abi}")
    print(f"{'case':<30} {'ms/call':>9} {'calls/s':>9} {'vs off':>7}")
    for name, seconds in medians.items():
        print(f"{name:<30} {seconds * 1000:>9.2f} {1 / seconds:>9.1f} {seconds / baseline:>7.2f}")
    if "pipeline, sandbox required" in medians:
        extra = (medians["pipeline, sandbox required"] - baseline) * 1000
        print(f"the sandbox adds {extra:.2f} ms per shell call")
    bare = medians["bare /bin/sh -c true"]
    report(
        "shell_execute `true` · sandbox off",
        baseline * 1000,
        "ms/call",
        baseline=bare * 1000,
        baseline_name="bare /bin/sh -c true",
        script="shell.py",
    )
    if "pipeline, sandbox required" in medians:
        report(
            "shell_execute `true` · sandbox required",
            medians["pipeline, sandbox required"] * 1000,
            "ms/call",
            baseline=baseline * 1000,
            baseline_name="the same call, sandbox off",
            script="shell.py",
        )


if __name__ == "__main__":
    main()
