"""Tool names as a provider's wire takes them, and the way back; unit tests."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from domain.agent.tool_names import WIRE_LIMIT, wire_names

OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
TOOL_NAMES = st.from_regex(r"^[A-Za-z0-9_.\-/]{1,128}\Z", fullmatch=True)
NAME_SETS = st.lists(
    st.one_of(TOOL_NAMES, st.sampled_from(["a/b", "a__b", "a.b", "a_b", "x" * 70])),
    unique=True,
    max_size=12,
)


def test_a_safe_name_goes_on_the_wire_unchanged() -> None:
    """`read_file` and `git-status` are already safe: they map to themselves."""
    names = wire_names(["read_file", "git-status"])

    assert ["read_file", "git-status"] == [names.to_wire("read_file"), names.to_wire("git-status")]
    assert False is names.changes_any


def test_a_server_tool_maps_slash_to_two_underscores_and_back() -> None:
    """`time/get_current_time` is `time__get_current_time` on the wire, and back again."""
    names = wire_names(["time/get_current_time", "read_file"])

    assert "time__get_current_time" == names.to_wire("time/get_current_time")
    assert "time/get_current_time" == names.from_wire("time__get_current_time")
    assert True is names.changes_any


def test_a_dot_becomes_one_underscore() -> None:
    """`fs/read.text` is `fs__read_text` on the wire."""
    assert "fs__read_text" == wire_names(["fs/read.text"]).to_wire("fs/read.text")


def test_a_mapped_name_another_tool_holds_ends_with_a_stable_hash() -> None:
    """`a/b` would be `a__b`, which a tool already is: it gets a hash suffix, every time."""
    names = wire_names(["a__b", "a/b"])
    wire = names.to_wire("a/b")

    assert ("a__b", "a__b") == (names.to_wire("a__b"), wire[:4])
    assert re.fullmatch(r"a__b_[0-9a-f]{8}", wire) is not None
    assert wire == wire_names(["a/b", "a__b"]).to_wire("a/b")
    assert "a/b" == names.from_wire(wire)


def test_a_name_longer_than_sixty_four_characters_is_cut_to_sixty_four() -> None:
    """A 100-character upstream name keeps its start and ends with a hash, 64 in all."""
    long = "server/" + "t" * 93
    wire = wire_names([long]).to_wire(long)

    assert WIRE_LIMIT == len(wire)
    assert "server__ttt" == wire[:11]


def test_an_unknown_wire_name_maps_to_itself() -> None:
    """A name the model made up comes back as it was."""
    assert "made_up" == wire_names(["time/now"]).from_wire("made_up")


def test_the_same_names_in_another_order_make_the_same_wire_names() -> None:
    """The mapping depends on the set of names, not their order."""
    tools = ["x.y", "x_y", "x/y", "x__y", "x-y"]
    first, second = wire_names(tools), wire_names(tools[::-1])

    assert [first.to_wire(t) for t in tools] == [second.to_wire(t) for t in tools]


@given(NAME_SETS)
def test_every_name_comes_back_from_its_wire_name(tools: list[str]) -> None:
    """from_wire(to_wire(name)) is the name, for any set of distinct valid names."""
    names = wire_names(tools)

    assert tools == [names.from_wire(names.to_wire(t)) for t in tools]


@given(NAME_SETS)
def test_every_wire_name_matches_the_openai_pattern(tools: list[str]) -> None:
    """Each wire name has only letters, digits, `_` and `-`, and at most 64 of them."""
    names = wire_names(tools)

    assert [] == [t for t in tools if OPENAI_NAME.fullmatch(names.to_wire(t)) is None]


@given(NAME_SETS)
def test_distinct_names_get_distinct_wire_names(tools: list[str]) -> None:
    """No two tools of a request share a wire name."""
    names = wire_names(tools)

    assert len(tools) == len({names.to_wire(t) for t in tools})
