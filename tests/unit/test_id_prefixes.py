"""The one rule for naming a thing by a unique prefix of its id; unit tests."""

from __future__ import annotations

from domain.id_prefixes import MIN_PREFIX, by_prefix

NAMES = ["abcd1234", "abcd5678", "ef012345"]


def test_a_whole_id_names_itself_even_when_it_starts_another():
    """An exact id wins over the longer ids it is a prefix of."""
    assert ["abc"] == by_prefix("abc", ["abc", "abcdef"])


def test_a_long_enough_prefix_names_every_id_it_starts():
    """Four characters or more pick every id that starts with them."""
    assert ["abcd1234", "abcd5678"] == by_prefix("abcd", NAMES)
    assert ["ef012345"] == by_prefix("ef01", NAMES)


def test_a_short_prefix_names_nothing():
    """Fewer than MIN_PREFIX characters match no id, however few ids there are."""
    assert 4 == MIN_PREFIX
    assert [] == by_prefix("ef0", NAMES)


def test_a_prefix_that_starts_no_id_names_nothing():
    """A long prefix of no id matches nothing."""
    assert [] == by_prefix("0000", NAMES)
