"""The system prompt: a stable prefix that stays byte-identical, a suffix that moves; unit tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from adapters.runtime.agent_prompt import PromptReader
from adapters.tools.contract import CallAssessment, ToolOutput
from domain.agent.prompt import (
    FILE_BUDGET,
    LOAD_FIRST,
    SUMMARY_LIMIT,
    TO_LOAD_LIMIT,
    TOTAL_BUDGET,
    OfferedTool,
    TurnFacts,
    bounded_files,
    digest,
    stable_prefix,
    summary,
    system_prompt,
    to_load_section,
)
from domain.tools.definition import Loading, ToolDefinition
from domain.values.audience import Audience
from tests.pipeline import Pipeline, make_pipeline

TOOLS = (
    OfferedTool("read_file", "Read a text file's lines."),
    OfferedTool("list_directory", "List a directory."),
)
FILES = {"AGENTS.md": "Use British spelling.", "MEMORY.md": "The user prefers short answers."}


def test_the_prefix_stays_byte_identical_while_the_date_and_working_context_change() -> None:
    """Three turns with other times, projects and recent files share one prefix and digest."""
    prefix = stable_prefix("You are ledgerclaw.", TOOLS, ["summarise"], FILES)
    turns = [
        TurnFacts(now="2026-12-01 09:00 CET (+01:00)"),
        TurnFacts(now="2026-12-01 09:05 CET (+01:00)", project_directory="/srv/app"),
        TurnFacts(
            now="2026-12-02 00:01 CET (+01:00)",
            project_directory="/srv/other",
            areas={"workspace": "/home/u/.ledgerclaw/sessions/s1/workspace"},
            recent_files=["src/app.py", "README.md"],
        ),
    ]

    prompts = [system_prompt(prefix, facts) for facts in turns]

    assert {prompts[0].prefix.encode()} == {p.prefix.encode() for p in prompts}
    assert {digest(prefix)} == {p.prefix_digest for p in prompts}
    assert 3 == len({p.text for p in prompts})
    assert all(p.text.startswith(prefix) for p in prompts)


def test_the_tool_catalog_is_listed_in_name_order_whatever_order_it_came_in() -> None:
    """The same tools offered in another order make the same prefix."""
    assert stable_prefix("id", TOOLS, [], {}) == stable_prefix("id", TOOLS[::-1], [], {})


def test_the_suffix_says_the_time_the_project_the_areas_and_recent_files() -> None:
    """Every volatile fact of the turn is in the suffix, and none of them in the prefix."""
    facts = TurnFacts(
        now="2026-12-01 14:03 UTC (+00:00)",
        project_directory="/srv/app",
        areas={"workspace": "/w", "tmp": "/t"},
        recent_files=["a.py"],
    )

    prompt = system_prompt(stable_prefix("id", TOOLS, [], FILES), facts)

    assert [
        "## This turn",
        "",
        "- Now: 2026-12-01 14:03 UTC (+00:00)",
        "- Project directory: /srv/app",
        "- Session tmp: /t",
        "- Session workspace: /w",
        "- Recent files: a.py",
    ] == prompt.suffix.splitlines()
    assert "/srv/app" not in prompt.prefix


def test_bootstrap_files_come_in_their_fixed_order_and_unknown_names_are_ignored() -> None:
    """AGENTS.md comes before MEMORY.md however they were found; other files stay out."""
    found = {"MEMORY.md": "m", "NOTES.md": "n", "AGENTS.md": "a"}

    assert [("AGENTS.md", "a"), ("MEMORY.md", "m")] == bounded_files(found)


def test_a_file_over_its_budget_is_cut_with_a_notice_saying_how_much_is_shown() -> None:
    """A 25,000-character AGENTS.md keeps its first 20,000 characters and says so."""
    ((name, text),) = bounded_files({"AGENTS.md": "x" * 25_000})

    assert "AGENTS.md" == name
    assert "x" * FILE_BUDGET == text[:FILE_BUDGET]
    assert text.endswith("[AGENTS.md truncated: 20,000 of 25,000 characters shown]")


def test_all_files_together_stay_within_the_total_budget() -> None:
    """Five full files share 60,000 characters: the first three fit, the last two are named."""
    names = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "MEMORY.md")
    files = dict.fromkeys(names, "y" * FILE_BUDGET)

    kept = bounded_files(files)
    shown = [text for _, text in kept[:3]]

    assert TOTAL_BUDGET == sum(len(text) for text in shown)
    assert [
        "[USER.md left out: the bootstrap files' 60,000 characters are spent]",
        "[MEMORY.md left out: the bootstrap files' 60,000 characters are spent]",
    ] == [text for _, text in kept[3:]]


def test_a_deferred_tool_is_listed_to_load_and_not_among_the_tools() -> None:
    """`find_files` waits to be loaded: it is under "Tools to load" with its first sentence."""
    deferred = OfferedTool("find_files", "Find files by glob. Deferred until loaded.")

    prefix = stable_prefix("id", TOOLS, [], {}, to_load=[deferred])
    tools, to_load = prefix.split("## Tools to load")

    assert "find_files" not in tools
    assert [
        "",
        "",
        LOAD_FIRST,
        "",
        "- find_files: Find files by glob.",
    ] == to_load.splitlines()


def test_the_tools_to_load_come_after_the_tools_and_before_the_skills() -> None:
    """The sections keep their order: tools, tools to load, skills, files."""
    prefix = stable_prefix(
        "id", TOOLS, ["summarise"], FILES, to_load=[OfferedTool("time/now", "The time.")]
    )
    headings = [line for line in prefix.splitlines() if line.startswith("## ")]

    assert ["## Tools", "## Tools to load", "## Skills", "## AGENTS.md", "## MEMORY.md"] == headings


def test_a_summary_is_the_first_sentence_cut_to_its_limit() -> None:
    """A first line ends a summary as a full stop does; a long sentence ends with an ellipsis."""
    assert ["Reads a clock.", "Lists zones", "x" * (SUMMARY_LIMIT - 1) + "…"] == [
        summary("  Reads a clock. Then formats it."),
        summary("Lists zones\nby region."),
        summary("x" * 500),
    ]


def test_more_than_a_hundred_tools_to_load_are_counted_past_the_hundredth() -> None:
    """130 tools to load: the first 100 by name are listed, then "…and 30 more"."""
    many = [OfferedTool(f"srv/tool_{n:03}", "A tool.") for n in range(130)]

    lines = to_load_section(many[::-1]).splitlines()

    assert ("- srv/tool_000: A tool.", "- srv/tool_099: A tool.", "…and 30 more") == (
        lines[4],
        lines[-2],
        lines[-1],
    )
    assert TO_LOAD_LIMIT + 5 == len(lines)


def test_the_same_tools_to_load_in_another_order_make_the_same_prefix() -> None:
    """The section is sorted by name, so the prefix stays byte-identical."""
    deferred = [OfferedTool("b/two", "Two."), OfferedTool("a/one", "One.")]

    assert stable_prefix("id", TOOLS, [], {}, to_load=deferred) == stable_prefix(
        "id", TOOLS, [], {}, to_load=deferred[::-1]
    )


class _ClockArguments(BaseModel):
    """No arguments."""


class _Clock:
    """A deferred upstream tool the tool set gains after a reader first looked."""

    arguments = _ClockArguments
    definition = ToolDefinition(
        name="time/get_current_time",
        description="The current time in a zone. It asks the time server.",
        parameters={"type": "object", "properties": {}},
        loading=Loading.DEFERRED,
    )

    def assess(self, arguments: object) -> CallAssessment:
        """No targets."""
        del arguments
        return CallAssessment(summary="")

    async def run(self, arguments: object, run: object) -> ToolOutput:
        """Never run here."""
        raise NotImplementedError


@pytest.fixture
def pipeline(tmp_path: Path) -> Iterator[Pipeline]:
    """The first-party tools on a journal in a temporary home."""
    made = make_pipeline(tmp_path)
    yield made
    made.close()


def _sections(reader: PromptReader, loaded: frozenset[str]) -> tuple[list[str], list[str]]:
    """The names under "## Tools" and under "## Tools to load" for a personal session."""
    tools, _, to_load = reader.offer(Audience.PERSONAL, loaded)
    prefix = stable_prefix(
        "id", [OfferedTool(t.name, t.description) for t in tools], [], {}, to_load=to_load
    )
    listed, _, waiting = prefix.partition("## Tools to load")
    return (
        [line.split(":")[0][2:] for line in listed.splitlines() if line.startswith("- ")],
        [line.split(":")[0][2:] for line in waiting.splitlines() if line.startswith("- ")],
    )


def test_a_deferred_first_party_tool_moves_to_the_tools_once_loaded(pipeline: Pipeline) -> None:
    """`find_files` is to load until the session loads it, then it is among the tools."""
    reader = PromptReader(pipeline.dispatcher)

    before = _sections(reader, frozenset())
    after = _sections(reader, frozenset({"find_files"}))

    assert (False, True) == ("find_files" in before[0], "find_files" in before[1])
    assert (True, False) == ("find_files" in after[0], "find_files" in after[1])


def test_a_tool_added_to_the_set_is_seen_by_a_reader_that_looked_before(
    pipeline: Pipeline,
) -> None:
    """A new generation of the tool set makes the offer again: the upstream tool is to load."""
    reader = PromptReader(pipeline.dispatcher)
    before = _sections(reader, frozenset())

    pipeline.dispatcher.tools.replace_group("time", [_Clock()])

    assert ["time/get_current_time"] == sorted(
        set(_sections(reader, frozenset())[1]) - set(before[1])
    )
    assert "time/get_current_time" in [
        t.name for t in reader.offered(Audience.PERSONAL, frozenset({"time/get_current_time"}))[0]
    ]
