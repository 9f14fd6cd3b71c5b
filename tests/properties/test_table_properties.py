"""Shortening a path in the middle, for any path and width: only whole parts are left out."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cli.tables import ELLIPSIS, shorten_middle

names = st.text(
    alphabet=st.characters(blacklist_characters="/…", blacklist_categories=["Cs"]),
    min_size=1,
    max_size=12,
)
paths = st.builds(
    lambda absolute, parts: ("/" if absolute else "") + "/".join(parts),
    st.booleans(),
    st.lists(names, min_size=1, max_size=10),
)


@given(paths, st.integers(min_value=0, max_value=80))
def test_a_shortened_path_keeps_its_ends_and_whole_parts(path: str, width: int) -> None:
    """The result is the path, or its first parts, an ellipsis and its last parts."""
    shown = shorten_middle(path, width)
    if shown == path:
        return
    parts, kept = path.split("/"), shown.split("/")
    cut = kept.index(ELLIPSIS)
    head, tail = kept[:cut], kept[cut + 1 :]
    assert ELLIPSIS not in head + tail
    assert parts[: len(head)] == head
    assert parts[len(parts) - len(tail) :] == tail
    assert 1 <= len(head)
    assert 1 <= len(tail)
    assert len(head) + len(tail) < len(parts)


@given(paths, st.integers(min_value=0, max_value=80))
def test_a_path_is_shortened_only_when_it_is_too_long(path: str, width: int) -> None:
    """A path that fits comes back unchanged; one too long never comes back longer."""
    shown = shorten_middle(path, width)
    assert (shown == path) or (len(path) > width)
    assert len(shown) <= len(path)
