"""Redaction, the inline bound, spill windows and the remediation presenter."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.tools.output import (
    INLINE_LIMIT,
    MIN_SECRET_PREFIX,
    REDACTED,
    WINDOW_LIMIT,
    bound,
    redact,
    redact_cut,
    spill_notice,
    window,
)
from domain.tools.remediation import INSTRUCTIONS, present
from domain.values.receipts import RemediationCode


def test_every_exact_secret_is_redacted_longest_first() -> None:
    """A secret that contains another is removed whole, not left half visible."""
    text = "key=abcd1234 short=abcd"
    assert f"key={REDACTED} short={REDACTED}" == redact(text, ["abcd", "abcd1234"])


DIGITS = st.text(alphabet="0123456789", min_size=4, max_size=8)


@given(st.text(alphabet="0123456789 ab"), st.lists(DIGITS, max_size=3))
def test_no_secret_survives_redaction(text: str, secrets: list[str]) -> None:
    """After redaction no configured secret occurs in the text, wherever it was."""
    redacted = redact(text + "".join(secrets) + text, secrets)
    for secret in secrets:
        assert secret not in redacted


def test_a_short_text_stays_inline() -> None:
    """Text within the bound is not spilled."""
    shown = bound("hello", limit=10)
    assert ("hello", False, 5) == (shown.inline, shown.spilled, shown.total_chars)


def test_a_long_text_is_cut_and_marked_for_spilling() -> None:
    """Text past the bound keeps its first characters inline and is spilled whole."""
    shown = bound("x" * 25, limit=10)
    assert ("x" * 10, True, 25) == (shown.inline, shown.spilled, shown.total_chars)
    assert "call_id 'c1'" in spill_notice("c1", 10, 25)


@given(st.text(max_size=200), st.integers(0, 250), st.integers(1, 50))
def test_windows_walk_a_spill_without_gaps(text: str, start: int, limit: int) -> None:
    """Following `next` from any start reads the rest of the text exactly once."""
    collected, position = "", start
    while True:
        chunk, following = window(text, position, limit)
        collected += chunk
        if following is None:
            break
        assert following == position + len(chunk)
        position = following
    assert text[start:] == collected


def test_the_presenter_appends_the_codes_fixed_instruction() -> None:
    """A visible tool gets its one instruction after the factual result."""
    tool, instruction = INSTRUCTIONS[RemediationCode.SET_WORKING_DIRECTORY]
    assert f"no base\n{instruction}" == present(
        "no base", RemediationCode.SET_WORKING_DIRECTORY, {tool}
    )


def test_the_presenter_leaves_the_result_when_the_tool_is_hidden() -> None:
    """An instruction naming a hidden tool is never shown."""
    assert "no base" == present("no base", RemediationCode.SET_WORKING_DIRECTORY, set())
    assert "plain" == present("plain", None, {"read_file"})


def test_every_remediation_code_has_one_instruction() -> None:
    """The presenter covers the whole closed vocabulary."""
    assert set(RemediationCode) == set(INSTRUCTIONS)


def test_a_cut_redacts_first_and_hides_a_split_secrets_start() -> None:
    """Whole secrets are replaced before the cut; a start left at the cut is hidden too."""
    secret = "abcdefgh12345678"
    text, cut = redact_cut("x" * 6 + secret + "tail", 12, [secret])
    assert ("x" * 6 + REDACTED[:6], True) == (text, cut)
    split, _ = redact_cut("y" * 4 + secret[:9], 100, [secret])
    assert "y" * 4 + REDACTED == split
    short, _ = redact_cut("zzz" + secret[:3], 100, [secret])
    assert "zzz" + secret[:3] == short


def test_a_secret_that_ends_another_is_not_left_half_visible() -> None:
    """Longest first, whatever the order given: `1abcd` goes whole, leaving no `1`."""
    assert f"k={REDACTED}" == redact("k=1abcd", ["abcd", "1abcd"])
    assert f"k={REDACTED}" == redact("k=1abcd", ["1abcd", "abcd"])


def test_an_empty_secret_redacts_nothing() -> None:
    """An empty configured value is ignored rather than matched between every character."""
    assert f"a{REDACTED}" == redact("ab", ["", "b"])
    assert ("ab", False) == redact_cut("ab", 10, [""])


SIXTEEN = "abcdefgh12345678"


@pytest.mark.parametrize("shown", range(MIN_SECRET_PREFIX, len(SIXTEEN)))
def test_a_secret_cut_at_the_bound_shows_none_of_its_characters(shown: int) -> None:
    """From `MIN_SECRET_PREFIX` characters on, a start of a secret at the cut is hidden whole."""
    text, cut = redact_cut("head " + SIXTEEN[:shown] + "Z" * 20, len("head ") + shown, [SIXTEEN])
    assert ("head " + REDACTED, True) == (text, cut)
    split, cut = redact_cut("head " + SIXTEEN[:shown], 100, [SIXTEEN])
    assert ("head " + REDACTED, False) == (split, cut)


def test_the_longest_secret_is_hidden_first_at_a_cut() -> None:
    """A start of the longer secret is hidden whole, not only the shorter secret inside it."""
    longer, shorter = "abcdwxyz1234", "wxyz5678"
    text, _ = redact_cut("> " + longer[:8], 100, [shorter, longer])
    assert "> " + REDACTED == text


def test_a_text_of_exactly_the_limit_is_not_cut() -> None:
    """At the limit nothing is cut or spilled; one character more is."""
    assert ("x" * 10, False) == redact_cut("x" * 10, 10, [])
    assert ("x" * 10, True) == redact_cut("x" * 11, 10, [])
    exact, over = bound("x" * INLINE_LIMIT), bound("x" * (INLINE_LIMIT + 1))
    assert (False, INLINE_LIMIT) == (exact.spilled, len(exact.inline))
    assert (True, INLINE_LIMIT, INLINE_LIMIT + 1) == (
        over.spilled,
        len(over.inline),
        over.total_chars,
    )


def test_a_window_ends_exactly_at_the_text_and_is_bounded() -> None:
    """A window reaching the end has no next offset; a limit is clamped to 1..WINDOW_LIMIT."""
    assert ("cdef", None) == window("abcdef", 2, 4)
    assert ("abcd", 4) == window("abcdef", 0, 4)
    assert ("a", 1) == window("abcdef", 0, 0)
    text = "y" * (WINDOW_LIMIT + 5)
    chunk, following = window(text, 0, WINDOW_LIMIT + 5)
    assert (WINDOW_LIMIT, WINDOW_LIMIT) == (len(chunk), following)
