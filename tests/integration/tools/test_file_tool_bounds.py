"""Bounds on the file tools' work: pathological globs, huge files, cancellation."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from adapters.tools.files.edit_file import EditFile
from adapters.tools.files.find_files import FindFiles
from adapters.tools.files.globbing import compile_glob, glob_problem
from adapters.tools.files.grep import Grep
from adapters.tools.files.list_directory import ListDirectory
from adapters.tools.files.read_file import ReadFile
from adapters.tools.files.revision import revision_of
from adapters.tools.files.write_file import WriteFile
from domain.values.receipts import OutcomeCategory
from tests.integration.tools.tool_run import invoke


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*a" * 12 + "b", "a" * 60, False),
        ("*a" * 12 + "b", "a" * 60 + "b", True),
        ("/".join(["**"] * 8) + "/x", "a/" * 40 + "y", False),
        ("/".join(["**"] * 8) + "/x", "a/" * 40 + "x", True),
        ("[a-c]?[!z]*.py", "b1y_long_name.py", True),
        ("src/**", "src", False),
        ("src/**", "src/a/b.py", True),
    ],
)
def test_globs_match_without_backtracking_blowups(pattern: str, path: str, expected: bool) -> None:
    """Many stars or `**` segments against long names still give the right answer at once."""
    assert expected == compile_glob(pattern)(path)


def test_a_reversed_range_is_a_glob_problem() -> None:
    """`[z-a]` is refused with a reason."""
    assert "reversed range" in glob_problem("[z-a].py")


@pytest.mark.anyio
async def test_a_pathological_glob_in_a_tree_returns(tmp_path: Path) -> None:
    """Grep and find_files with a many-star glob over a long name finish normally."""
    (tmp_path / ("a" * 60)).write_text("x\n")
    pattern = "*a" * 12 + "b"
    found = await invoke(FindFiles(), {"pattern": pattern}, tmp_path)
    grepped = await invoke(Grep(), {"pattern": "x", "glob": pattern}, tmp_path)
    assert "no files" in found.text
    assert "a" * 60 not in grepped.text


@pytest.mark.anyio
async def test_a_huge_file_is_read_only_up_to_its_window(tmp_path: Path) -> None:
    """Past 10 MiB, read_file stops after the window: no revision, a lower-bound count."""
    huge = tmp_path / "huge.log"
    with huge.open("wb") as handle:
        handle.write(b"first line\n" + b"more text\n" * 200_000)
        handle.truncate(4 * 1024**3)  # sparse beyond the text: 4 GiB that cost no disk
    output = await invoke(ReadFile(), {"path": "huge.log", "limit": 1}, tmp_path)
    first = output.text.split("\n")[0]
    assert "revision: not computed (file too large to edit)" in first
    assert "of at least" in first
    assert "first line" in output.text


@pytest.mark.anyio
async def test_a_cancelled_search_stops_its_worker_thread(tmp_path: Path) -> None:
    """A grep over a large tree ends soon after its caller cancels it."""
    for index in range(300):
        (tmp_path / f"f{index:03d}.txt").write_text("needle\n" * 20_000)
    with anyio.move_on_after(0.05) as scope:
        await invoke(Grep(), {"pattern": "haystack$", "limit": 1000}, tmp_path)
    assert scope.cancelled_caught


@pytest.mark.anyio
async def test_a_read_only_file_is_not_replaced(tmp_path: Path) -> None:
    """write_file and edit_file leave a file without write permission unchanged."""
    target = tmp_path / "locked.txt"
    target.write_text("keep\n")
    target.chmod(0o444)
    revision = revision_of(b"keep\n")
    written = await invoke(WriteFile(), {"path": "locked.txt", "content": "x"}, tmp_path)
    edited = await invoke(
        EditFile(),
        {"path": "locked.txt", "old_text": "keep", "new_text": "x", "revision": revision},
        tmp_path,
    )
    for output in (written, edited):
        assert OutcomeCategory.ACCESS_DENIED == output.outcome
    assert "keep\n" == target.read_text()
    assert [] == [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.anyio
async def test_a_backtracking_pattern_is_stopped_not_hung(tmp_path: Path) -> None:
    """Grep's own regex gets a time budget: a pattern that backtracks for ever is stopped."""
    (tmp_path / "a.txt").write_text("a" * 64 + "b\n")
    output = await invoke(Grep(search_seconds=0.3), {"pattern": "^(a|aa)+$"}, tmp_path)
    assert OutcomeCategory.SUCCESS == output.outcome
    assert "stopped after 0.3 s of matching: simplify the pattern" in output.text


@pytest.mark.anyio
async def test_a_listing_does_not_reveal_where_an_outside_link_points(tmp_path: Path) -> None:
    """A link inside the root to a place outside is listed, its target withheld."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "inside.txt").write_text("x")
    (root / "near").symlink_to("inside.txt")
    (root / "far").symlink_to("/etc/hostname")
    output = await invoke(ListDirectory(), {"path": "."}, root)
    assert "near@ -> inside.txt" in output.text
    assert "far@ -> (a place this session may not read)" in output.text
    assert "/etc" not in output.text
