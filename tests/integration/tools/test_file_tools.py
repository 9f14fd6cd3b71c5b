"""The workspace file tools on real files in a temporary trusted root."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import cast

import pytest

from adapters.tools.contract import Tool
from adapters.tools.files.atomic import atomic_replace
from adapters.tools.files.edit_file import EditFile
from adapters.tools.files.find_files import FindFiles
from adapters.tools.files.globbing import compile_glob, glob_problem
from adapters.tools.files.grep import Grep
from adapters.tools.files.list_directory import ListDirectory
from adapters.tools.files.read_file import ReadFile, ReadFileArguments
from adapters.tools.files.revision import revision_of
from adapters.tools.files.write_file import WriteFile, WriteFileArguments
from domain.authorization.roots import ProtectedPaths
from domain.tools.definition import Concurrency, Loading
from domain.values.authorization import FileOperation
from domain.values.receipts import FileActivity, OutcomeCategory, RemediationCode
from tests.integration.tools.tool_run import invoke, make_run

MIB = 1024 * 1024


def temp_files(root: Path) -> list[str]:
    """Every temporary file an atomic write could leave below `root`."""
    return sorted(str(p) for p in root.rglob("*.tmp"))


def entries(root: Path) -> list[str]:
    """The names directly in `root`, sorted."""
    return sorted(p.name for p in root.iterdir())


# --- revision and glob matching ---------------------------------------------------------


def test_revision_is_sha256_prefix_of_sixteen_hex_digits() -> None:
    """A revision is `sha256:` and the first 16 hex digits of the content's SHA-256."""
    assert "sha256:2cf24dba5fb0a30e" == revision_of(b"hello")


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/pkg/a.py", True),
        ("**/*.py", "src/a.pyc", False),
        ("*.py", "src/a.py", False),
        ("*.py", ".hidden.py", True),
        ("src/**/test_*.py", "src/test_a.py", True),
        ("src/**/test_*.py", "src/x/y/test_a.py", True),
        ("src/**", "src/x/y", True),
        ("?.txt", "a.txt", True),
        ("?.txt", "ab.txt", False),
        ("[!a]x", "bx", True),
        ("[!a]x", "ax", False),
        ("[ab]x", "bx", True),
        ("a[x", "a[x", True),
    ],
)
def test_glob_matches_relative_paths(pattern: str, path: str, expected: bool) -> None:
    """`*` stays within a segment, `**` spans segments, sets and `?` match one character."""
    assert expected == compile_glob(pattern)(path)


@pytest.mark.parametrize("pattern", ["/etc/*", "../*.py", "a/../../b", "~/x", "[z-a]"])
def test_glob_problem_names_unusable_patterns(pattern: str) -> None:
    """Absolute patterns, `..` segments and invalid sets are refused with a reason."""
    assert "" != glob_problem(pattern)


# --- read_file ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_read_file_numbers_lines_under_a_header(tmp_path: Path) -> None:
    """The output is a header with path, revision and range, then numbered lines."""
    (tmp_path / "a.txt").write_bytes(b"alpha\nbeta\n")
    output = await invoke(ReadFile(), {"path": "a.txt"}, tmp_path)
    revision = revision_of(b"alpha\nbeta\n")
    header = f"path: {tmp_path / 'a.txt'}  revision: {revision}"
    assert f"{header}  lines 1-2 of 2\n     1\talpha\n     2\tbeta" == output.text
    assert OutcomeCategory.SUCCESS == output.outcome
    read = FileActivity(path=str(tmp_path / "a.txt"), operation=FileOperation.READ)
    assert (read,) == output.file_activity


@pytest.mark.anyio
async def test_read_file_shows_the_requested_window(tmp_path: Path) -> None:
    """start_line and limit select lines, and the rest is announced with where to go on."""
    (tmp_path / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    output = await invoke(ReadFile(), {"path": "a.txt", "start_line": 4, "limit": 3}, tmp_path)
    lines = output.text.split("\n")
    assert lines[0].endswith("lines 4-6 of 10")
    assert ["     4\tline 4", "     5\tline 5", "     6\tline 6"] == lines[1:4]
    assert "... 4 more lines; continue with start_line=7" == lines[4]


@pytest.mark.anyio
async def test_read_file_counts_a_last_line_without_newline(tmp_path: Path) -> None:
    """A final line with no newline is still a line."""
    (tmp_path / "a.txt").write_bytes(b"one\ntwo")
    output = await invoke(ReadFile(), {"path": "a.txt"}, tmp_path)
    assert output.text.endswith("lines 1-2 of 2\n     1\tone\n     2\ttwo")


@pytest.mark.anyio
async def test_read_file_past_the_end_is_invalid_input(tmp_path: Path) -> None:
    """A start_line beyond the last line is refused as invalid input."""
    (tmp_path / "a.txt").write_text("one\n")
    output = await invoke(ReadFile(), {"path": "a.txt", "start_line": 5}, tmp_path)
    assert OutcomeCategory.INVALID_INPUT == output.outcome
    assert () == output.file_activity


@pytest.mark.anyio
async def test_read_file_revision_is_stable_and_follows_content(tmp_path: Path) -> None:
    """Reading twice gives one revision; a content change gives another."""
    target = tmp_path / "a.txt"
    target.write_text("one\n")
    first = await invoke(ReadFile(), {"path": "a.txt"}, tmp_path)
    again = await invoke(ReadFile(), {"path": "a.txt", "start_line": 1, "limit": 1}, tmp_path)
    target.write_text("two\n")
    changed = await invoke(ReadFile(), {"path": "a.txt"}, tmp_path)
    revision = re.compile(r"revision: (\S+)")
    revisions = [revision.findall(o.text)[0] for o in (first, again, changed)]
    assert [revision_of(b"one\n"), revision_of(b"one\n"), revision_of(b"two\n")] == revisions


@pytest.mark.anyio
async def test_read_file_cuts_long_lines_with_a_marker(tmp_path: Path) -> None:
    """A line longer than 2000 characters shows its first 2000 and a marker."""
    (tmp_path / "a.txt").write_text("x" * 5000 + "\n")
    output = await invoke(ReadFile(), {"path": "a.txt"}, tmp_path)
    line = output.text.split("\n")[1]
    assert "     1\t" + "x" * 2000 + " [... line cut at 2000 characters]" == line


@pytest.mark.anyio
async def test_read_file_streams_a_large_file(tmp_path: Path) -> None:
    """A file over 10 MiB shows the window and the revision of the whole file."""
    data = b"".join(b"%07d %s\n" % (n, b"y" * 100) for n in range(110_000))
    assert len(data) > 10 * MIB
    (tmp_path / "big.txt").write_bytes(data)
    arguments = {"path": "big.txt", "start_line": 109_999, "limit": 5}
    output = await invoke(ReadFile(), arguments, tmp_path)
    lines = output.text.split("\n")
    assert f"revision: {revision_of(data)}  lines 109999-110000 of 110000" in lines[0]
    assert "110000\t0109999 " + "y" * 100 == lines[2]


@pytest.mark.anyio
async def test_read_file_binary_shows_only_a_notice(tmp_path: Path) -> None:
    """A file with a NUL early on is binary: its size and revision, no content."""
    data = b"\x89PNG\x00\x01\x02"
    (tmp_path / "x.png").write_bytes(data)
    output = await invoke(ReadFile(), {"path": "x.png"}, tmp_path)
    header = f"path: {tmp_path / 'x.png'}  revision: {revision_of(data)}"
    assert f"{header}\nbinary file (7 bytes); content not shown" == output.text
    assert OutcomeCategory.SUCCESS == output.outcome


@pytest.mark.anyio
async def test_read_file_empty_file_says_so(tmp_path: Path) -> None:
    """An empty file reads as zero lines."""
    (tmp_path / "empty").write_bytes(b"")
    output = await invoke(ReadFile(), {"path": "empty"}, tmp_path)
    assert output.text.endswith("empty file (0 lines)")


@pytest.mark.anyio
async def test_read_file_missing_is_not_found(tmp_path: Path) -> None:
    """A path with nothing there is not found, with no file activity."""
    output = await invoke(ReadFile(), {"path": "nope.txt"}, tmp_path)
    assert (OutcomeCategory.NOT_FOUND, ()) == (output.outcome, output.file_activity)


@pytest.mark.anyio
async def test_read_file_directory_is_invalid_input(tmp_path: Path) -> None:
    """A directory is invalid input, pointing at list_directory."""
    (tmp_path / "d").mkdir()
    output = await invoke(ReadFile(), {"path": "d"}, tmp_path)
    assert OutcomeCategory.INVALID_INPUT == output.outcome
    assert "is a directory; use list_directory" in output.text


@pytest.mark.anyio
async def test_read_file_refuses_a_link_swapped_in_after_the_check(tmp_path: Path) -> None:
    """A link put at the checked real location after authorization is not followed."""
    target = tmp_path / "a.txt"
    target.write_text("checked\n")
    (tmp_path / "other.txt").write_text("other\n")
    run = make_run(tmp_path, {"path": "a.txt"})
    target.unlink()
    target.symlink_to(tmp_path / "other.txt")
    output = await ReadFile().run(ReadFileArguments(path="a.txt"), run)
    assert OutcomeCategory.ACCESS_DENIED == output.outcome


# --- list_directory ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_list_directory_sorts_and_marks_entries(tmp_path: Path) -> None:
    """Entries are sorted; directories end in `/`, files show sizes, links their targets."""
    (tmp_path / "b.txt").write_text("abc")
    (tmp_path / "a").mkdir()
    (tmp_path / "c").symlink_to("b.txt")
    output = await invoke(ListDirectory(), {}, tmp_path)
    expected = f"directory: {tmp_path}  entries: 3\na/\nb.txt  3 bytes\nc@ -> b.txt"
    assert expected == output.text
    read = FileActivity(path=str(tmp_path), operation=FileOperation.READ)
    assert (read,) == output.file_activity


@pytest.mark.anyio
async def test_list_directory_bounds_the_listing(tmp_path: Path) -> None:
    """Past the limit, entries are counted in a final line."""
    for n in range(7):
        (tmp_path / f"f{n}").write_text("")
    output = await invoke(ListDirectory(), {"limit": 3}, tmp_path)
    assert ["f0  0 bytes", "f1  0 bytes", "f2  0 bytes", "... 4 more"] == output.text.split("\n")[
        1:
    ]


@pytest.mark.anyio
async def test_list_directory_refuses_files_and_missing_paths(tmp_path: Path) -> None:
    """A file is invalid input and a missing path is not found."""
    (tmp_path / "f").write_text("")
    on_file = await invoke(ListDirectory(), {"path": "f"}, tmp_path)
    missing = await invoke(ListDirectory(), {"path": "nope"}, tmp_path)
    expected = (OutcomeCategory.INVALID_INPUT, OutcomeCategory.NOT_FOUND)
    assert expected == (on_file.outcome, missing.outcome)


# --- find_files --------------------------------------------------------------------------


def make_tree(root: Path) -> None:
    """A small project: sources at two depths, a text file and a linked directory."""
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "a.py").write_text("import os\n")
    (root / "src" / "pkg" / "b.py").write_text("def b():\n    return 'B'\n")
    (root / "top.py").write_text("print('top')\n")
    (root / "notes.txt").write_text("todo: import more\n")
    (root / "linked").symlink_to(root / "src")


@pytest.mark.anyio
async def test_find_files_matches_at_any_depth_with_double_star(tmp_path: Path) -> None:
    """`**/*.py` finds sources at every depth, sorted, and not through linked directories."""
    make_tree(tmp_path)
    output = await invoke(FindFiles(), {"pattern": "**/*.py"}, tmp_path)
    assert "src/a.py\nsrc/pkg/b.py\ntop.py" == output.text
    read = FileActivity(path=str(tmp_path), operation=FileOperation.READ)
    assert (read,) == output.file_activity


@pytest.mark.anyio
async def test_find_files_never_enters_a_linked_directory(tmp_path: Path) -> None:
    """A link to a directory is listed as an entry but not searched."""
    make_tree(tmp_path)
    output = await invoke(FindFiles(), {"pattern": "linked/**"}, tmp_path)
    assert "no files under" in output.text
    link = await invoke(FindFiles(), {"pattern": "linked"}, tmp_path)
    assert "linked" == link.text


@pytest.mark.anyio
async def test_find_files_leaves_out_denied_matches(tmp_path: Path) -> None:
    """A protected file or tree is never reported."""
    make_tree(tmp_path)
    protected = ProtectedPaths(
        files=frozenset({str(tmp_path / "top.py")}),
        trees=frozenset({str(tmp_path / "src" / "pkg")}),
    )
    output = await invoke(FindFiles(), {"pattern": "**/*.py"}, tmp_path, protected=protected)
    assert "src/a.py" == output.text


@pytest.mark.anyio
async def test_find_files_stops_at_the_limit(tmp_path: Path) -> None:
    """No more than `limit` matches are returned, and the output says so."""
    for n in range(5):
        (tmp_path / f"f{n}.txt").write_text("")
    output = await invoke(FindFiles(), {"pattern": "*.txt", "limit": 2}, tmp_path)
    lines = output.text.split("\n")
    assert ["f0.txt", "f1.txt"] == lines[:2]
    assert "reached the limit of 2 matches" in lines[2]


@pytest.mark.anyio
@pytest.mark.parametrize("pattern", ["/etc/*", "../**/*.py"])
async def test_find_files_refuses_patterns_leaving_the_directory(
    tmp_path: Path, pattern: str
) -> None:
    """Absolute patterns and `..` segments are invalid input."""
    output = await invoke(FindFiles(), {"pattern": pattern}, tmp_path)
    assert OutcomeCategory.INVALID_INPUT == output.outcome


# --- grep --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_grep_reports_matching_lines_with_locations(tmp_path: Path) -> None:
    """Each match shows the relative path and line number; a count line follows."""
    make_tree(tmp_path)
    output = await invoke(Grep(), {"pattern": r"import \w+"}, tmp_path)
    expected = [
        "notes.txt:1: todo: import more",
        "src/a.py:1: import os",
        "2 matching lines in 2 of 4 files searched",
    ]
    assert expected == output.text.split("\n")
    read = FileActivity(path=str(tmp_path), operation=FileOperation.READ)
    assert (read,) == output.file_activity


@pytest.mark.anyio
async def test_grep_filters_by_glob_and_ignores_case(tmp_path: Path) -> None:
    """A glob narrows the files by name; ignore_case matches either case."""
    make_tree(tmp_path)
    arguments = {"pattern": "b", "glob": "*.py", "ignore_case": True}
    output = await invoke(Grep(), arguments, tmp_path)
    expected = [
        "src/pkg/b.py:1: def b():",
        "src/pkg/b.py:2:     return 'B'",
        "2 matching lines in 1 of 3 files searched",
    ]
    assert expected == output.text.split("\n")


@pytest.mark.anyio
async def test_grep_stops_at_the_limit(tmp_path: Path) -> None:
    """No more than `limit` lines are shown, and the count says the search stopped."""
    (tmp_path / "a.txt").write_text("hit\n" * 10)
    output = await invoke(Grep(), {"pattern": "hit", "path": "a.txt", "limit": 3}, tmp_path)
    lines = output.text.split("\n")
    assert ["a.txt:1: hit", "a.txt:2: hit", "a.txt:3: hit"] == lines[:3]
    assert "stopped at the limit of 3 lines" in lines[3]


@pytest.mark.anyio
async def test_grep_invalid_regex_is_invalid_input(tmp_path: Path) -> None:
    """A pattern that does not compile is invalid input naming the error."""
    output = await invoke(Grep(), {"pattern": "(unclosed"}, tmp_path)
    assert OutcomeCategory.INVALID_INPUT == output.outcome
    assert "missing )" in output.text


@pytest.mark.anyio
async def test_grep_skips_binary_and_denied_files(tmp_path: Path) -> None:
    """Binary files are skipped and counted; protected files are skipped silently."""
    (tmp_path / "blob.bin").write_bytes(b"needle\x00\x01")
    (tmp_path / "secret.txt").write_text("needle\n")
    (tmp_path / "plain.txt").write_text("needle\n")
    protected = ProtectedPaths(files=frozenset({str(tmp_path / "secret.txt")}))
    output = await invoke(Grep(), {"pattern": "needle"}, tmp_path, protected=protected)
    expected = [
        "plain.txt:1: needle",
        "1 matching lines in 1 of 1 files searched; binary files skipped: 1",
    ]
    assert expected == output.text.split("\n")


# --- write_file --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_write_file_creates_a_file_and_reports_its_revision(tmp_path: Path) -> None:
    """A new file is written whole; the output names bytes, path and new revision."""
    output = await invoke(WriteFile(), {"path": "new.txt", "content": "hi\n"}, tmp_path)
    revision = revision_of(b"hi\n")
    expected = f"wrote 3 bytes to {tmp_path / 'new.txt'}; revision: {revision}"
    assert expected == output.text
    assert b"hi\n" == (tmp_path / "new.txt").read_bytes()
    write = FileActivity(path=str(tmp_path / "new.txt"), operation=FileOperation.WRITE)
    assert (write,) == output.file_activity
    assert [] == temp_files(tmp_path)


@pytest.mark.anyio
async def test_write_file_keeps_the_mode_of_the_replaced_file(tmp_path: Path) -> None:
    """Replacing a file keeps its permission bits."""
    target = tmp_path / "a.txt"
    target.write_text("old\n")
    target.chmod(0o640)
    await invoke(WriteFile(), {"path": "a.txt", "content": "new\n"}, tmp_path)
    assert (0o640, "new\n") == (stat.S_IMODE(target.stat().st_mode), target.read_text())


@pytest.mark.anyio
async def test_write_file_through_a_symlink_is_access_denied(tmp_path: Path) -> None:
    """A path whose last component is a link is not written, nor is the link's target."""
    (tmp_path / "real.txt").write_text("original\n")
    (tmp_path / "link.txt").symlink_to("real.txt")
    output = await invoke(WriteFile(), {"path": "link.txt", "content": "x"}, tmp_path)
    assert OutcomeCategory.ACCESS_DENIED == output.outcome
    assert "original\n" == (tmp_path / "real.txt").read_text()
    assert (tmp_path / "link.txt").is_symlink()


@pytest.mark.anyio
async def test_write_file_refuses_a_link_swapped_in_after_the_check(tmp_path: Path) -> None:
    """A link put at the checked location after authorization is refused, not followed."""
    target = tmp_path / "a.txt"
    target.write_text("checked\n")
    (tmp_path / "other.txt").write_text("other\n")
    run = make_run(tmp_path, {"path": ("a.txt", FileOperation.WRITE)})
    target.unlink()
    target.symlink_to("other.txt")
    arguments = WriteFileArguments(path="a.txt", content="x")
    output = await WriteFile().run(arguments, run)
    assert OutcomeCategory.ACCESS_DENIED == output.outcome
    assert ("other\n", []) == ((tmp_path / "other.txt").read_text(), temp_files(tmp_path))


@pytest.mark.anyio
async def test_write_file_missing_parent_is_not_found(tmp_path: Path) -> None:
    """No directories are created: a missing parent is not found and nothing is left."""
    output = await invoke(WriteFile(), {"path": "no/such/a.txt", "content": "x"}, tmp_path)
    assert OutcomeCategory.NOT_FOUND == output.outcome
    assert [] == entries(tmp_path)


@pytest.mark.anyio
async def test_write_file_stale_revision_is_a_correction(tmp_path: Path) -> None:
    """A revision the file no longer has asks for a re-read and writes nothing."""
    (tmp_path / "a.txt").write_text("current\n")
    stale = revision_of(b"older\n")
    arguments = {"path": "a.txt", "content": "x", "revision": stale}
    output = await invoke(WriteFile(), arguments, tmp_path)
    expected = (OutcomeCategory.RECOVERABLE_CORRECTION, RemediationCode.REFRESH_FILE_REVISION)
    assert expected == (output.outcome, output.remediation)
    assert revision_of(b"current\n") in output.text
    assert "current\n" == (tmp_path / "a.txt").read_text()


@pytest.mark.anyio
async def test_write_file_revision_of_a_missing_file_is_a_correction(tmp_path: Path) -> None:
    """A revision for a file that does not exist says so, and creates nothing."""
    arguments = {"path": "a.txt", "content": "x", "revision": revision_of(b"x")}
    output = await invoke(WriteFile(), arguments, tmp_path)
    assert OutcomeCategory.RECOVERABLE_CORRECTION == output.outcome
    assert "does not exist" in output.text
    assert not (tmp_path / "a.txt").exists()


@pytest.mark.anyio
async def test_write_file_with_the_current_revision_writes(tmp_path: Path) -> None:
    """The revision read_file reported lets the write through."""
    (tmp_path / "a.txt").write_text("v1\n")
    arguments = {"path": "a.txt", "content": "v2\n", "revision": revision_of(b"v1\n")}
    output = await invoke(WriteFile(), arguments, tmp_path)
    assert (OutcomeCategory.SUCCESS, "v2\n") == (output.outcome, (tmp_path / "a.txt").read_text())


def test_atomic_replace_leaves_no_temporary_file_on_failure(tmp_path: Path) -> None:
    """A write that fails after the temporary file exists removes it and re-raises."""
    target = tmp_path / "a.txt"
    target.write_text("kept\n")
    with pytest.raises(TypeError):
        atomic_replace(str(target), cast("bytes", "not bytes"))
    assert ("kept\n", ["a.txt"]) == (target.read_text(), entries(tmp_path))


def test_atomic_replace_creates_new_files_under_the_umask(tmp_path: Path) -> None:
    """A new file gets 0o644 less the process umask."""
    umask = os.umask(0o022)
    os.umask(umask)
    atomic_replace(str(tmp_path / "n.txt"), b"x")
    assert 0o644 & ~umask == stat.S_IMODE((tmp_path / "n.txt").stat().st_mode)


# --- edit_file ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_edit_file_replaces_a_unique_occurrence(tmp_path: Path) -> None:
    """old_text found once is replaced; the output counts it and gives the new revision."""
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    arguments = {
        "path": "a.py",
        "old_text": "y = 2",
        "new_text": "y = 3",
        "revision": revision_of(b"x = 1\ny = 2\n"),
    }
    output = await invoke(EditFile(), arguments, tmp_path)
    expected = f"replaced 1 occurrence in {tmp_path / 'a.py'}; revision: " + revision_of(
        b"x = 1\ny = 3\n"
    )
    assert expected == output.text
    assert "x = 1\ny = 3\n" == (tmp_path / "a.py").read_text()
    write = FileActivity(path=str(tmp_path / "a.py"), operation=FileOperation.WRITE)
    assert (write,) == output.file_activity


@pytest.mark.anyio
async def test_edit_file_stale_revision_is_a_correction(tmp_path: Path) -> None:
    """A stale revision names the current one and changes nothing."""
    (tmp_path / "a.py").write_text("x = 1\n")
    arguments = {
        "path": "a.py",
        "old_text": "1",
        "new_text": "2",
        "revision": revision_of(b"x = 0\n"),
    }
    output = await invoke(EditFile(), arguments, tmp_path)
    expected = (OutcomeCategory.RECOVERABLE_CORRECTION, RemediationCode.REFRESH_FILE_REVISION)
    assert expected == (output.outcome, output.remediation)
    current = revision_of(b"x = 1\n")
    assert f"the current revision of {tmp_path / 'a.py'} is {current}" in output.text
    assert "x = 1\n" == (tmp_path / "a.py").read_text()


@pytest.mark.anyio
async def test_edit_file_ambiguous_old_text_is_invalid_input(tmp_path: Path) -> None:
    """old_text found more than once without replace_all is refused with the count."""
    (tmp_path / "a.txt").write_text("a a a\n")
    revision = revision_of(b"a a a\n")
    arguments = {"path": "a.txt", "old_text": "a", "new_text": "b", "revision": revision}
    output = await invoke(EditFile(), arguments, tmp_path)
    assert OutcomeCategory.INVALID_INPUT == output.outcome
    assert "occurs 3 times" in output.text
    assert "a a a\n" == (tmp_path / "a.txt").read_text()


@pytest.mark.anyio
async def test_edit_file_replace_all_replaces_every_occurrence(tmp_path: Path) -> None:
    """replace_all replaces each occurrence and counts them."""
    (tmp_path / "a.txt").write_text("a a a\n")
    arguments = {
        "path": "a.txt",
        "old_text": "a",
        "new_text": "bb",
        "revision": revision_of(b"a a a\n"),
        "replace_all": True,
    }
    output = await invoke(EditFile(), arguments, tmp_path)
    assert output.text.startswith("replaced 3 occurrences in ")
    assert ("bb bb bb\n", []) == ((tmp_path / "a.txt").read_text(), temp_files(tmp_path))


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("content", "old_text", "phrase"),
    [(b"abc\n", "xyz", "was not found"), (b"\xff\xfe\n", "a", "is not UTF-8 text")],
)
async def test_edit_file_refuses_absent_text_and_non_utf8_files(
    tmp_path: Path, content: bytes, old_text: str, phrase: str
) -> None:
    """Absent old_text and undecodable files are invalid input."""
    (tmp_path / "a.txt").write_bytes(content)
    arguments = {
        "path": "a.txt",
        "old_text": old_text,
        "new_text": "z",
        "revision": revision_of(content),
    }
    output = await invoke(EditFile(), arguments, tmp_path)
    assert OutcomeCategory.INVALID_INPUT == output.outcome
    assert phrase in output.text


@pytest.mark.anyio
async def test_edit_file_through_a_symlink_is_access_denied(tmp_path: Path) -> None:
    """An edit never follows a link at the named path."""
    (tmp_path / "real.txt").write_text("a\n")
    (tmp_path / "link.txt").symlink_to("real.txt")
    arguments = {
        "path": "link.txt",
        "old_text": "a",
        "new_text": "b",
        "revision": revision_of(b"a\n"),
    }
    output = await invoke(EditFile(), arguments, tmp_path)
    assert (OutcomeCategory.ACCESS_DENIED, "a\n") == (
        output.outcome,
        (tmp_path / "real.txt").read_text(),
    )


# --- definitions -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "name", "loading", "concurrency"),
    [
        (ReadFile(), "read_file", Loading.CORE, Concurrency.PARALLEL_SAFE),
        (ListDirectory(), "list_directory", Loading.CORE, Concurrency.PARALLEL_SAFE),
        (FindFiles(), "find_files", Loading.DEFERRED, Concurrency.PARALLEL_SAFE),
        (Grep(), "grep", Loading.CORE, Concurrency.PARALLEL_SAFE),
        (WriteFile(), "write_file", Loading.CORE, Concurrency.SEQUENTIAL),
        (EditFile(), "edit_file", Loading.CORE, Concurrency.SEQUENTIAL),
    ],
)
def test_definitions_describe_every_argument(
    tool: Tool, name: str, loading: Loading, concurrency: Concurrency
) -> None:
    """Each tool has its name, loading and concurrency, and every parameter a description."""
    definition = tool.definition
    assert (name, loading, concurrency) == (
        definition.name,
        definition.loading,
        definition.concurrency,
    )
    properties = cast("dict[str, dict[str, object]]", definition.parameters["properties"])
    assert [] == [key for key, schema in properties.items() if not schema.get("description")]
