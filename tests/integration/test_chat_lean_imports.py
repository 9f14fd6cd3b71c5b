"""The command line starts without Textual: only a chat attaching to a daemon loads it."""

from __future__ import annotations

import subprocess
import sys


def loaded_after(statement: str, modules: tuple[str, ...]) -> str:
    """Which of `modules` a fresh interpreter has loaded after running `statement`."""
    code = f"import sys; {statement}; print([m for m in {modules!r} if m in sys.modules])"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.strip()


def test_importing_the_command_line_loads_no_textual() -> None:
    """`import cli.app` (every command's start) imports neither Textual nor the chat app."""
    assert "[]" == loaded_after("import cli.app", ("textual", "cli.chat_tui.app"))


def test_the_conversation_model_needs_no_textual() -> None:
    """The chat's conversation state and its text are plain Python, testable without Textual."""
    assert "[]" == loaded_after(
        "import cli.chat_tui.conversation, cli.chat_tui.lines", ("textual",)
    )
