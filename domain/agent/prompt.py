"""The system prompt as a stable prefix and a volatile suffix, with its digests; domain layer.

The stable prefix (identity, the tools offered, the tools to load, skills, bootstrap files)
stays byte-identical across the turns of a session, so a provider's prompt cache keeps
hitting; whatever changes from turn to turn (the date and time, the project directory, recent
files) goes in the suffix after it. Reading the bootstrap files is the caller's work; this
module only bounds and arranges what was read.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

BOOTSTRAP_FILES = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "MEMORY.md")
"""The files read into the prefix, in this order, when they exist."""
FILE_BUDGET = 20_000
"""Characters of one bootstrap file that enter the prompt."""
TOTAL_BUDGET = 60_000
"""Characters of all bootstrap files together."""
TO_LOAD_LIMIT = 100
"""Tools to load listed by name at most; the rest are counted."""
SUMMARY_LIMIT = 160
"""Characters of a tool to load's summary (the first sentence of its description)."""
LOAD_FIRST = (
    "These tools are not in this request yet: call `load_tool` with a tool's name first, "
    "then call the tool."
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n")


@dataclass(frozen=True)
class OfferedTool:
    """A tool as the prompt's catalog lists it."""

    name: str
    description: str


@dataclass(frozen=True)
class TurnFacts:
    """What the volatile suffix says about the moment of one turn."""

    now: str
    """The local date, time and zone, already formatted (`2026-12-01 14:03 CET (+01:00)`)."""
    project_directory: str | None = None
    areas: Mapping[str, str] | None = None
    """The session's storage areas by name (workspace, artifacts, tmp, spills)."""
    recent_files: Sequence[str] = ()


@dataclass(frozen=True)
class SystemPrompt:
    """The whole system prompt, split where a cache breakpoint belongs."""

    prefix: str
    suffix: str

    @property
    def text(self) -> str:
        """The prompt as one text: the prefix, a blank line, the suffix."""
        return f"{self.prefix}\n\n{self.suffix}"

    @property
    def prefix_digest(self) -> str:
        """The sha256 of the stable prefix: equal across turns while nothing stable changed."""
        return digest(self.prefix)


def digest(text: str) -> str:
    """The hex sha256 of a text's UTF-8 bytes."""
    return hashlib.sha256(text.encode()).hexdigest()


def bounded_files(files: Mapping[str, str]) -> list[tuple[str, str]]:
    """The bootstrap files in their order, each cut to its budget and all to the total.

    A cut file ends with a notice that says how much of it is shown, so the model knows the
    rest exists; a file that no longer fits at all is named with the same notice.
    """
    kept: list[tuple[str, str]] = []
    left = TOTAL_BUDGET
    for name in BOOTSTRAP_FILES:
        text = files.get(name)
        if text is None:
            continue
        allowed = min(FILE_BUDGET, left)
        if allowed == 0:
            text = f"[{name} left out: the bootstrap files' {TOTAL_BUDGET:,} characters are spent]"
        elif len(text) > allowed:
            shown = text[:allowed]
            text = f"{shown}\n[{name} truncated: {allowed:,} of {len(text):,} characters shown]"
            left -= allowed
        else:
            left -= len(text)
        kept.append((name, text))
    return kept


def summary(description: str) -> str:
    """The first sentence of a tool's description, cut to SUMMARY_LIMIT characters."""
    text = description.strip()
    first = _SENTENCE_END.split(text, maxsplit=1)[0].strip()
    if len(first) > SUMMARY_LIMIT:
        return first[: SUMMARY_LIMIT - 1].rstrip() + "…"
    return first


def to_load_section(tools: Sequence[OfferedTool]) -> str:
    """The section naming the tools a session may load, in name order, at most TO_LOAD_LIMIT."""
    ordered = sorted(tools, key=lambda tool: tool.name)
    lines = [f"- {tool.name}: {summary(tool.description)}" for tool in ordered[:TO_LOAD_LIMIT]]
    if len(ordered) > TO_LOAD_LIMIT:
        lines.append(f"…and {len(ordered) - TO_LOAD_LIMIT} more")
    return "## Tools to load\n\n" + LOAD_FIRST + "\n\n" + "\n".join(lines)


def stable_prefix(
    identity: str,
    tools: Sequence[OfferedTool],
    skills: Sequence[str],
    files: Mapping[str, str],
    *,
    to_load: Sequence[OfferedTool] = (),
) -> str:
    """The part of the system prompt that stays the same from turn to turn.

    `tools` are the tools of the request, `to_load` those the session may see but must load
    with `load_tool` before they are in a request.
    """
    sections = [identity.strip()]
    if tools:
        ordered = sorted(tools, key=lambda tool: tool.name)
        lines = [f"- {tool.name}: {tool.description.strip()}" for tool in ordered]
        sections.append("## Tools\n\n" + "\n".join(lines))
    if to_load:
        sections.append(to_load_section(to_load))
    if skills:
        sections.append("## Skills\n\n" + "\n".join(f"- {skill}" for skill in skills))
    for name, text in bounded_files(files):
        sections.append(f"## {name}\n\n{text.strip()}")
    return "\n\n".join(sections)


def volatile_suffix(facts: TurnFacts) -> str:
    """The part of the system prompt that may change every turn."""
    lines = ["## This turn", "", f"- Now: {facts.now}"]
    project = facts.project_directory
    lines.append(f"- Project directory: {project}" if project else "- Project directory: none set")
    for name, path in sorted((facts.areas or {}).items()):
        lines.append(f"- Session {name}: {path}")
    if facts.recent_files:
        lines.append("- Recent files: " + ", ".join(facts.recent_files))
    return "\n".join(lines)


def system_prompt(prefix: str, facts: TurnFacts) -> SystemPrompt:
    """The system prompt of one turn: the session's stable prefix and this turn's suffix."""
    return SystemPrompt(prefix=prefix, suffix=volatile_suffix(facts))
