"""The one table style of every listing, fitted to the width without cutting a word; CLI layer.

Each column says what it holds, and so how it may give way when the table is too wide:

- a word (an id, a time, a name, a status) or a number is never cut or wrapped; an id may
  have a shorter form that still works (its prefix), used before anything else gives way;
- a path is shortened in the middle, at its separators (`/srv/…/notes/today.md`);
- text wraps between words, never inside one.

When the table is too wide, text wraps first (down to a readable width); if that is not
enough, ids take their short form, then optional columns are dropped (the rightmost first),
then paths are shortened in the middle; an optional path column is shortened before it is
dropped, and only dropped when even its shortest form does not fit.

If what must stay is still wider than the terminal, the table is printed wider than the
terminal rather than cut. Rows are plain lines (no box),
so they survive grep, less and copying; headers are bold.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

GAP = 2
"""Spaces between two columns."""
TEXT_FLOOR = 24
"""Text narrower than this wraps too often to read: optional columns are dropped first."""
ELLIPSIS = "…"

Cell = str | Text
"""What a row holds for a column: plain text, or styled text (a verdict, a lag)."""


class Kind(StrEnum):
    """What a column holds, which decides how it gives way when space is short."""

    WORD = "word"
    NUMBER = "number"
    PATH = "path"
    TEXT = "text"


@dataclass(frozen=True)
class Column:
    """One column of a listing: its header, what it holds, and whether it may be dropped."""

    header: str
    kind: Kind = Kind.WORD
    optional: bool = False
    """Dropped, rightmost first, when the table does not fit."""
    short: Callable[[str], str] | None = None
    """A shorter form that still works (an id's prefix), used when the table does not fit."""


def word(header: str, *, optional: bool = False) -> Column:
    """A column of single words (names, statuses, times): never cut, never wrapped."""
    return Column(header, Kind.WORD, optional)


def ident(header: str, short: Callable[[str], str], *, optional: bool = False) -> Column:
    """A column of ids: whole when they fit, else in their `short` form; never cut."""
    return Column(header, Kind.WORD, optional, short)


def number(header: str, *, optional: bool = False) -> Column:
    """A right-aligned column of numbers: never cut."""
    return Column(header, Kind.NUMBER, optional)


def path(header: str, *, optional: bool = False) -> Column:
    """A column of paths: shortened in the middle, at separators, when space is short."""
    return Column(header, Kind.PATH, optional)


def text(header: str, *, optional: bool = False) -> Column:
    """A column of free text: wrapped between words when space is short."""
    return Column(header, Kind.TEXT, optional)


def shorten_middle(value: str, width: int) -> str:
    """`value` (a path) at most `width` long if it can be, by leaving out whole middle parts.

    The first and last parts always stay (`/very/long/…/file.txt`); a path that cannot get
    that short comes back as short as it gets, never cut inside a name.
    """
    if len(value) <= width:
        return value
    parts = value.split("/")
    if len(parts) < 3:  # noqa: PLR2004 - a first part, a middle and a last one
        return value
    head, middle, tail = [parts[0]], parts[1:-1], [parts[-1]]
    take_head = True
    while middle:
        candidate = middle[0] if take_head else middle[-1]
        grown = [*head, candidate] if take_head else head
        grown_tail = tail if take_head else [candidate, *tail]
        if len("/".join([*grown, ELLIPSIS, *grown_tail])) > width:
            break
        if take_head:
            head, middle = grown, middle[1:]
        else:
            tail, middle = grown_tail, middle[:-1]
        take_head = not take_head
    if not middle:
        return value
    return "/".join([*head, ELLIPSIS, *tail])


@dataclass
class _Fitted:
    column: Column
    cells: list[Cell]
    width: int = 0

    @property
    def plain(self) -> list[str]:
        return [cell.plain if isinstance(cell, Text) else cell for cell in self.cells]

    @property
    def natural(self) -> int:
        return max([cell_len(self.column.header), *(cell_len(cell) for cell in self.plain)])

    @property
    def narrowest(self) -> int:
        """The least width this column can take as it stands (before shortening paths)."""
        if self.column.kind is Kind.TEXT:
            return max(self.longest_word, min(self.natural, TEXT_FLOOR))
        return self.natural

    @property
    def longest_word(self) -> int:
        """The widest word of a text column: it wraps no narrower than this."""
        values = [self.column.header, *self.plain]
        return max([1, *(cell_len(word) for value in values for word in value.split())])

    @property
    def shortest(self) -> int:
        """The least width of a path column with every path shortened as far as it goes."""
        shortened = (cell_len(shorten_middle(value, 0)) for value in self.plain)
        return max([cell_len(self.column.header), *shortened])


def _total(widths: Sequence[int]) -> int:
    return sum(widths) + GAP * (len(widths) - 1)


def _fit(columns: list[_Fitted], width: int) -> list[_Fitted]:
    """The columns that stay, each with its width, so the table fits `width` if it can."""
    kept = list(columns)
    if not _fits(kept, width):
        for fitted in kept:
            if fitted.column.short is not None:
                fitted.cells = [_shorter(cell, fitted.column.short) for cell in fitted.cells]
    while not _fits(kept, width) and (dropped := _droppable(kept, path=False)) is not None:
        kept.remove(dropped)
    whole = {id(c): list(c.cells) for c in kept if c.column.kind is Kind.PATH}
    # An optional path is shortened before it is dropped: part of it says more than none.
    _shorten_paths(kept, whole, width)
    while not _fits(kept, width) and (dropped := _droppable(kept, path=True)) is not None:
        kept.remove(dropped)
        _shorten_paths(kept, whole, width)
    for column in kept:
        column.width = column.narrowest
    texts = [c for c in kept if c.column.kind is Kind.TEXT]
    room = width - _total([c.width for c in kept])
    for column in texts:
        # Wider when there is room; narrower than is comfortable (down to the longest word)
        # when what must stay would otherwise not fit.
        change = min(room, column.natural - column.width)
        change = max(change, column.longest_word - column.width)
        column.width += change
        room -= change
    return kept


def _fits(kept: list[_Fitted], width: int) -> bool:
    return _total([c.narrowest for c in kept]) <= width


def _droppable(kept: list[_Fitted], *, path: bool) -> _Fitted | None:
    """The rightmost optional column of paths (or of anything else), if one may go."""
    optional = [c for c in kept if c.column.optional and (c.column.kind is Kind.PATH) == path]
    return optional[-1] if optional and len(kept) > 1 else None


def _shorten_paths(kept: list[_Fitted], whole: dict[int, list[Cell]], width: int) -> None:
    """Shorten every path column to share the room left, from the whole paths each time."""
    paths = [c for c in kept if c.column.kind is Kind.PATH]
    for column in paths:
        column.cells = list(whole[id(column)])
    if not paths or _fits(kept, width):
        return
    others = _total([c.narrowest for c in kept if c not in paths]) + GAP * len(paths)
    budget = max(0, width - others) // len(paths)
    for column in paths:
        target = max(budget, column.shortest)
        column.cells = [shorten_middle(value, target) for value in column.plain]


def _shorter(cell: Cell, short: Callable[[str], str]) -> Cell:
    return cell if isinstance(cell, Text) else short(cell)


def _lines(column: _Fitted, cell: Cell) -> list[Cell]:
    if column.column.kind is not Kind.TEXT:
        return [cell]
    value = cell.plain if isinstance(cell, Text) else cell
    wrapped = textwrap.wrap(value, column.width, break_long_words=False, break_on_hyphens=False)
    return list(wrapped) or [""]


def _padded(column: _Fitted, cell: Cell, *, last: bool) -> Text:
    piece = cell if isinstance(cell, Text) else Text(cell)
    room = column.width - piece.cell_len
    if column.column.kind is Kind.NUMBER:
        return Text(" " * room) + piece
    return piece if last else piece + Text(" " * room)


def listing(
    console: Console,
    columns: Sequence[Column],
    rows: Sequence[Mapping[str, Cell]],
    title: str | None = None,
    *,
    width: int | None = None,
) -> None:
    """Print `rows` (each a cell per column header) in the one table style, fitted.

    The table fits `width`, else `$COLUMNS` as it is now, else the console's width (the
    terminal's, or 80 when the output is not a terminal).
    """
    fitted = [_Fitted(c, [row.get(c.header, "") for row in rows]) for c in columns]
    kept = _fit(fitted, width or _columns() or console.width)
    lines: list[Text] = []
    if title is not None:
        lines.append(Text(title, style="bold"))
    header = [Text(c.column.header, style="bold") for c in kept]
    lines.append(_joined(kept, [[cell] for cell in header]))
    lines.extend(
        _joined(kept, [_lines(c, c.cells[index]) for c in kept]) for index in range(len(rows))
    )
    console.print(Text("\n").join(lines), soft_wrap=True)


def _columns() -> int | None:
    """`$COLUMNS` now: a console reads it only when it is made."""
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def _joined(kept: list[_Fitted], cells: list[list[Cell]]) -> Text:
    height = max(len(lines) for lines in cells)
    rows: list[Text] = []
    for at in range(height):
        row = Text(" " * GAP).join(
            _padded(c, lines[at] if at < len(lines) else "", last=c is kept[-1])
            for c, lines in zip(kept, cells, strict=True)
        )
        row.rstrip()
        rows.append(row)
    return Text("\n").join(rows)
