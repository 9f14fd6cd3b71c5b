"""The listing machinery: what gives way, in which order, when a table is too wide."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from cli import tables


def render(width: int, columns: tuple[tables.Column, ...], rows: list[dict[str, str]]) -> str:
    """The listing as a console of `width` columns prints it."""
    console = Console(file=io.StringIO(), width=width, color_system=None)
    tables.listing(console, columns, rows, width=width)
    output = console.file
    assert isinstance(output, io.StringIO)
    return output.getvalue()


def short(value: str) -> str:
    """A stand-in for an id's usable prefix."""
    return value[:6]


@pytest.mark.parametrize(
    ("path", "width", "expected"),
    [
        ("/srv/notes/today.md", 40, "/srv/notes/today.md"),
        ("/very/long/path/to/some/file.txt", 20, "/very/…/file.txt"),
        ("/very/long/path/to/some/file.txt", 25, "/very/…/some/file.txt"),
        ("/a/b/c/an-extremely-long-file-name.txt", 5, "/…/an-extremely-long-file-name.txt"),
        ("src/cli/render.py", 12, "src/…/render.py"),
        ("a-single-name-without-separators.txt", 5, "a-single-name-without-separators.txt"),
    ],
)
def test_a_path_loses_whole_middle_parts_only(path: str, width: int, expected: str) -> None:
    """Shortening keeps the first and last parts and drops whole parts between them."""
    assert expected == tables.shorten_middle(path, width)


def test_a_table_that_fits_is_printed_as_it_is() -> None:
    """With room enough nothing is shortened, dropped or wrapped."""
    columns = (tables.ident("id", short), tables.word("name", optional=True), tables.text("why"))
    rows = [{"id": "abcdef0123456789", "name": "first", "why": "because it is so"}]
    assert "id                name   why\nabcdef0123456789  first  because it is so\n" == render(
        80, columns, rows
    )


def test_text_wraps_between_words_before_anything_else_gives_way() -> None:
    """A text column wraps first; ids stay whole and optional columns stay."""
    columns = (tables.ident("id", short), tables.word("name", optional=True), tables.text("why"))
    rows = [{"id": "abcdef0123456789", "name": "first", "why": " ".join(["word"] * 12)}]
    out = render(52, columns, rows)
    assert "abcdef0123456789" in out
    assert "first" in out
    assert all(len(line) <= 52 for line in out.splitlines())
    assert 12 == out.split().count("word")


def test_ids_take_their_short_form_before_a_column_is_dropped() -> None:
    """When wrapping is not enough, ids shorten to their prefix and every column stays."""
    columns = (tables.ident("id", short), tables.word("name", optional=True), tables.text("why"))
    rows = [{"id": "abcdef0123456789", "name": "first", "why": "x" * 24}]
    out = render(40, columns, rows)
    assert "abcdef0123456789" not in out
    assert ["abcdef", "first", "x" * 24] == out.splitlines()[1].split()


def test_optional_columns_go_rightmost_first_before_paths_shorten() -> None:
    """Optional columns are dropped from the right; then a path is shortened in its middle."""
    columns = (
        tables.word("at"),
        tables.word("first", optional=True),
        tables.word("second", optional=True),
        tables.path("path"),
    )
    path = "/srv/customers/northwind/projects/planning/notes.md"
    rows = [{"at": "10:00:00", "first": "aaaaaaaa", "second": "bbbbbbbb", "path": path}]
    wide = render(90, columns, rows).splitlines()
    one_dropped = render(75, columns, rows).splitlines()
    shortened = render(40, columns, rows).splitlines()
    assert ["at", "first", "second", "path"] == wide[0].split()
    assert ["at", "first", "path"] == one_dropped[0].split()
    assert ["at", "path"] == shortened[0].split()
    assert ["10:00:00", "aaaaaaaa", path] == one_dropped[1].split()
    assert ["10:00:00", "/srv/…/planning/notes.md"] == shortened[1].split()


def test_what_must_stay_is_printed_wider_rather_than_cut() -> None:
    """Essential words wider than the console widen the table; none is cut."""
    columns = (tables.word("key"), tables.word("status"))
    key = "k" * 60
    out = render(40, columns, [{"key": key, "status": "running"}])
    assert [key, "running"] == out.splitlines()[1].split()


def test_numbers_are_right_aligned_under_their_header() -> None:
    """A number column lines its values up on the right, with its header."""
    columns = (tables.word("tool"), tables.number("calls"))
    out = render(80, columns, [{"tool": "grep", "calls": "7"}, {"tool": "read", "calls": "1200"}])
    assert ["tool  calls", "grep      7", "read   1200"] == out.splitlines()


def test_an_optional_path_is_shortened_before_it_is_dropped() -> None:
    """An optional path column gives way by its middle first, and goes only when it must."""
    columns = (tables.word("at"), tables.path("target", optional=True), tables.text("why"))
    path = "/srv/customers/northwind/projects/planning/notes.md"
    rows = [{"at": "10:00:00", "target": path, "why": "allowed by the project root"}]
    shortened = render(60, columns, rows).splitlines()
    dropped = render(30, columns, rows).splitlines()
    assert ["at", "target", "why"] == shortened[0].split()
    [shown] = [word for word in shortened[1].split() if "…" in word]
    assert shown.startswith("/srv/")
    assert shown.endswith("/notes.md")
    assert ["at", "why"] == dropped[0].split()
