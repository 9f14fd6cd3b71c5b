"""How each entry of the terminal chat reads: rich text, no widgets; CLI layer.

A tool call is one line, `▸ NAME ARGUMENTS  OUTCOME`; expanded (`▾`) it shows its whole
arguments, its result and the notes on its way (approvals, denials). Text from the model or
a tool is never read as markup.
"""

from __future__ import annotations

import orjson
from rich.text import Text

from cli.chat_tui.approval import LABELS, choices, directory_of
from cli.chat_tui.conversation import Conversation
from cli.chat_tui.entries import (
    USER,
    ApprovalPrompt,
    Attachment,
    Entry,
    Notice,
    Said,
    Streaming,
    ToolCall,
)

SENT, RECEIVED = "session.attachment_sent", "session.attachment_received"
ARGUMENTS_WIDTH = 60
RESULT_LINES = 40
TONES = {"info": "dim", "warning": "yellow", "error": "bold red"}
UNITS = ("B", "KiB", "MiB", "GiB")


def render(entry: Entry) -> Text:
    """The text of one entry."""
    if isinstance(entry, Said):
        return said(entry)
    if isinstance(entry, ToolCall):
        return tool_call(entry)
    if isinstance(entry, ApprovalPrompt):
        return approval(entry)
    if isinstance(entry, Attachment):
        return attachment(entry)
    if isinstance(entry, Streaming | Notice):
        return plain(entry)
    return Text(entry.key)


def plain(entry: Streaming | Notice) -> Text:
    """A streamed answer (in italics), or a notice in its tone."""
    if isinstance(entry, Streaming):
        return Text(entry.text, style="italic")
    return Text(entry.text, style=TONES.get(entry.tone, "dim"))


def said(entry: Said) -> Text:
    """`you> TEXT` or the assistant's text; a message not journaled yet says its state."""
    if entry.role != USER:
        return Text(entry.text)
    text = Text("you> ", style="bold cyan")
    text.append(entry.text)
    if entry.state:
        style = "red" if entry.state.startswith("not sent") else "dim"
        text.append(f"  ({entry.state})", style=style)
    return text


def tool_call(call: ToolCall) -> Text:
    """One line per call; expanded, its arguments, result and notes below."""
    text = Text("▾ " if call.expanded else "▸ ", style="dim")
    text.append(call.name, style="bold")
    if not call.expanded:
        text.append(" " + cut(one_line(arguments(call)), ARGUMENTS_WIDTH), style="dim")
    text.append("  ")
    text.append(call.status, style=_status_style(call))
    if call.notes and not call.expanded:
        text.append(f"  ({call.notes[-1]})", style="dim")
    if call.expanded:
        pretty = orjson.dumps(call.arguments, option=orjson.OPT_INDENT_2).decode()
        text.append("\n  arguments:\n", style="dim")
        text.append(_indent(pretty))
        text.append("\n  result:\n", style="dim")
        text.append(_indent(_head(call.result)) if call.result is not None else "    (none yet)")
        for note in call.notes:
            text.append(f"\n  · {note}", style="dim")
    return text


def approval(prompt: ApprovalPrompt) -> Text:
    """What the prompt asks, whom it reaches, and what a widened answer would cover."""
    text = Text("? approve ", style="bold yellow")
    text.append(prompt.tool, style="bold")
    text.append(f": {prompt.summary}")
    offered = choices(prompt)
    words = ", ".join(LABELS[choice] for choice in offered)
    text.append(f"\n  {words}", style="dim")
    directory = directory_of(prompt)
    if directory is not None:
        text.append(f"\n  this directory: {directory}", style="dim")
    if prompt.covers:
        text.append(f"\n  this session covers: {prompt.covers}", style="dim")
    if prompt.answering:
        text.append(f"\n  sending: {prompt.answering}…", style="dim")
    if prompt.problem:
        text.append(f"\n  refused: {prompt.problem}", style="red")
    return text


def attachment(entry: Attachment) -> Text:
    """`📎 NAME (TYPE, SIZE) sha256:…` for a file sent, `📥 …` for one received with a message."""
    received = entry.event == RECEIVED
    text = Text("📥 " if received else "📎 ", style="bold")
    if entry.refused is not None:
        text.append(f"refused {entry.name}: {entry.refused}", style="yellow")
        return text
    text.append(entry.name, style="bold")
    known = [part for part in (entry.media_type, _size(entry.size)) if part]
    if known:
        text.append(f" ({', '.join(known)})", style="dim")
    if entry.sha256:
        text.append(f" sha256:{entry.sha256[:12]}", style="dim")
    if entry.event not in {SENT, RECEIVED}:
        text.append(f"  [{entry.event}]", style="dim")
    return text


def status_line(conversation: Conversation) -> str:
    """The line above the input: the session, the link and whether a run works."""
    work = f"working ({conversation.running})" if conversation.running else "idle"
    return f"{conversation.session}  ·  {conversation.link}  ·  {work}"


def arguments(call: ToolCall) -> str:
    """The call's arguments as compact JSON."""
    return orjson.dumps(call.arguments).decode()


def one_line(text: str) -> str:
    """`text` with its line breaks shown as spaces."""
    return " ".join(text.split())


def cut(text: str, width: int) -> str:
    """`text` cut in the middle to at most `width` characters."""
    if len(text) <= width:
        return text
    half = (width - 1) // 2
    return f"{text[:half]}…{text[-(width - 1 - half) :]}"


def _status_style(call: ToolCall) -> str:
    if not call.answered:
        return "yellow" if call.status == "awaiting approval" else "dim"
    return "red" if call.failed else "green"


def _head(result: str) -> str:
    lines = result.splitlines()
    if len(lines) <= RESULT_LINES:
        return result
    return "\n".join([*lines[:RESULT_LINES], f"… {len(lines) - RESULT_LINES} more lines"])


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.splitlines() or [""])


def _size(size: int | None) -> str | None:
    if size is None:
        return None
    value, unit = float(size), 0
    while value >= 1024 and unit < len(UNITS) - 1:  # noqa: PLR2004 - a kibibyte
        value, unit = value / 1024, unit + 1
    return f"{size} B" if unit == 0 else f"{value:.1f} {UNITS[unit]}"
