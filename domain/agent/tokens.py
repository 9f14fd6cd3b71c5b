"""Token estimates for prompts and messages before a provider reports usage; domain layer.

About four characters make a token in most scripts; a CJK character is about one. The
provider's reported usage always wins over an estimate when it is present.
"""

from __future__ import annotations

CHARACTERS_PER_TOKEN = 4
CJK_RANGES = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x2E80, 0x2FDF),  # CJK radicals
    (0x3000, 0x303F),  # CJK symbols and punctuation
    (0x3040, 0x30FF),  # Hiragana and Katakana
    (0x3100, 0x31FF),  # Bopomofo, Hangul compatibility Jamo, Katakana extensions
    (0x3400, 0x4DBF),  # CJK Unified Ideographs Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF00, 0xFFEF),  # half- and full-width forms
    (0x20000, 0x2FA1F),  # supplementary ideographic planes
)


def is_cjk(character: str) -> bool:
    """Whether one character belongs to a script that spends about a token per character."""
    point = ord(character)
    return any(low <= point <= high for low, high in CJK_RANGES)


def estimate_tokens(text: str) -> int:
    """The estimated tokens of `text`: CJK characters one each, the rest four to a token."""
    if text.isascii():
        return -(-len(text) // CHARACTERS_PER_TOKEN)
    cjk = sum(1 for character in text if is_cjk(character))
    other = len(text) - cjk
    return cjk + -(-other // CHARACTERS_PER_TOKEN)


def request_fits(prompt_tokens: int, context_window: int, output_reserve: int) -> bool:
    """Whether a request of `prompt_tokens` leaves `output_reserve` tokens in the window.

    A request that does not fit is never sent truncated: the run ends `context_exhausted`.
    """
    if context_window <= 0 or output_reserve < 0:
        msg = "a context window must be positive and an output reserve not negative"
        raise ValueError(msg)
    return prompt_tokens + output_reserve <= context_window
