"""Redaction, the inline bound, spill windows and the remediation presenter."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from domain.session.values import RemediationCode
from domain.tools.output import REDACTED, bound, redact, redact_cut, spill_notice, window
from domain.tools.remediation import INSTRUCTIONS, present


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
