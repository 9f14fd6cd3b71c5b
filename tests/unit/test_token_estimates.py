"""Token estimates before a provider reports usage: four characters a token, CJK one; unit tests."""

from __future__ import annotations

from domain.agent.tokens import estimate_tokens, is_cjk


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
