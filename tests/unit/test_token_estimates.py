"""Token estimates before a provider reports usage: four characters a token, CJK one; unit tests."""

from __future__ import annotations

import pytest

from domain.agent.tokens import estimate_tokens, is_cjk, request_fits


def test_latin_text_is_about_four_characters_a_token_rounded_up() -> None:
    """Eight ASCII characters are two tokens; nine are three; nothing is none."""
    assert [0, 2, 3] == [
        estimate_tokens(""),
        estimate_tokens("abcdefgh"),
        estimate_tokens("abcdefghi"),
    ]


def test_cjk_characters_count_one_token_each() -> None:
    """Chinese, Japanese and Korean text is estimated a token per character."""
    assert [4, 5, 2] == [
        estimate_tokens("日本語文"),
        estimate_tokens("ひらがなカ"),
        estimate_tokens("한국"),
    ]


def test_mixed_text_adds_its_cjk_characters_to_its_other_characters_share() -> None:
    """Two ideographs and eight Latin letters are four tokens."""
    assert 4 == estimate_tokens("漢字abcdefgh")


def test_accented_latin_is_not_mistaken_for_cjk() -> None:
    """Non-ASCII letters outside the CJK blocks count as ordinary characters."""
    assert (False, 2) == (is_cjk("é"), estimate_tokens("éèêëàâîï"))


def test_a_request_fits_only_while_the_output_reserve_still_fits_beside_it() -> None:
    """Exactly filling the window fits; one token more does not."""
    assert (True, False) == (request_fits(7_000, 8_192, 1_192), request_fits(7_001, 8_192, 1_192))


def test_a_window_of_zero_or_a_negative_reserve_is_refused() -> None:
    """A nonsensical model limit is a typed error, not a run that can never ask."""
    with pytest.raises(ValueError, match="context window must be positive"):
        request_fits(1, 0, 0)
    with pytest.raises(ValueError, match="not negative"):
        request_fits(1, 10, -1)
