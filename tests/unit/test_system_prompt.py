"""The system prompt: a stable prefix that stays byte-identical, a suffix that moves; unit tests."""

from __future__ import annotations

from domain.agent.prompt import (
    FILE_BUDGET,
    TOTAL_BUDGET,
    OfferedTool,
    TurnFacts,
    bounded_files,
    digest,
    stable_prefix,
    system_prompt,
)

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
