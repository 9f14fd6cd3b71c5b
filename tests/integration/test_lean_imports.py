"""The command line starts without the model providers' SDKs: only a run that asks loads one."""

from __future__ import annotations

import subprocess
import sys

SDKS = ("openai", "anthropic", "langgraph")


def test_importing_the_command_line_loads_no_provider_sdk() -> None:
    """`import cli.app` (every command's start) imports none of the SDKs."""
    code = f"import sys, cli.app; print([m for m in {SDKS!r} if m in sys.modules])"

    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )

    assert "[]" == done.stdout.strip()
