"""What the journal keeps of a call's arguments: redacted, bounded, digested; unit tests."""

from __future__ import annotations

import hashlib
import json

from pydantic import JsonValue

from domain.tools.arguments import (
    ARGUMENTS_LIMIT,
    HEAD_LIMIT,
    VALUE_LIMIT,
    bounded_value,
    compact_json,
    record_arguments,
)
from domain.tools.output import REDACTED

SECRET = "hunter2-very-secret"


def test_small_arguments_are_kept_as_they_are_without_a_spill() -> None:
    """Arguments well inside the bounds are recorded unchanged, and nothing is spilled."""
    arguments: dict[str, JsonValue] = {"path": "notes.txt", "limit": 20, "flags": [True, None, 1.5]}

    recorded, spill = record_arguments(arguments, [SECRET])

    assert (arguments, (), None) == (recorded.arguments, recorded.bounded, spill)


def test_a_secret_in_a_value_or_a_key_is_redacted() -> None:
    """Every exact secret value becomes the redaction mark, in strings and in keys alike."""
    arguments: dict[str, JsonValue] = {
        "command": f"echo {SECRET}",
        SECRET: {"nested": [f"a{SECRET}b"]},
    }

    recorded, _ = record_arguments(arguments, [SECRET])

    expected = {"command": f"echo {REDACTED}", REDACTED: {"nested": [f"a{REDACTED}b"]}}
    assert expected == recorded.arguments
    assert SECRET not in compact_json(recorded.arguments)


def test_two_keys_that_redact_alike_both_stay() -> None:
    """A key that redacts to an existing key gets a number, so no value is lost."""
    recorded, _ = record_arguments({SECRET: 1, REDACTED: 2}, [SECRET])

    assert {REDACTED: 1, f"{REDACTED}#2": 2} == recorded.arguments


def test_a_long_value_is_kept_as_digest_size_and_head_and_spilled_whole() -> None:
    """A string over the value limit keeps its digest, size and first bytes; the spill has all."""
    content = "x" * 500 + SECRET + "y" * VALUE_LIMIT
    arguments: dict[str, JsonValue] = {"path": "big.txt", "parts": [{"content": content}]}

    recorded, spill = record_arguments(arguments, [SECRET])

    redacted = content.replace(SECRET, REDACTED).encode()
    expected = {
        "sha256": hashlib.sha256(redacted).hexdigest(),
        "size": len(redacted),
        "head": "x" * HEAD_LIMIT,
    }
    assert {"path": "big.txt", "parts": [{"content": expected}]} == recorded.arguments
    assert ("/parts/0/content",) == recorded.bounded
    assert spill is not None
    assert {"path": "big.txt", "parts": [{"content": redacted.decode()}]} == json.loads(spill)


def test_a_head_that_ends_inside_a_secret_shows_only_part_of_the_mark() -> None:
    """The byte bound falls inside a secret: it was redacted first, so none of it shows."""
    content = "a" * (HEAD_LIMIT - 5) + SECRET + "b" * VALUE_LIMIT

    head = bounded_value(content, [SECRET])["head"]

    assert "a" * (HEAD_LIMIT - 5) + REDACTED[:5] == head


def test_a_head_of_multibyte_text_ends_on_a_whole_character() -> None:
    """The head is at most the byte limit, cut before a character that would not fit."""
    head = bounded_value("é" * VALUE_LIMIT, [])["head"]

    assert "é" * (HEAD_LIMIT // 2) == head


def test_pointers_escape_slashes_and_tildes_in_keys() -> None:
    """A bounded value's JSON pointer follows RFC 6901 for keys with `/` and `~`."""
    recorded, _ = record_arguments({"a/b~c": "z" * (VALUE_LIMIT + 1)}, [])

    assert ("/a~1b~0c",) == recorded.bounded


def test_arguments_too_large_as_a_whole_keep_only_the_whole_digest() -> None:
    """Many short values over the arguments limit: the whole object becomes digest and head."""
    arguments = {f"k{i}": "v" * 100 for i in range(ARGUMENTS_LIMIT // 100)}

    recorded, spill = record_arguments(arguments, [])

    assert spill is not None
    whole = spill.encode()
    assert ("",) == recorded.bounded
    assert hashlib.sha256(whole).hexdigest() == recorded.arguments["sha256"]
    assert (len(whole), spill[:HEAD_LIMIT]) == (
        recorded.arguments["size"],
        recorded.arguments["head"],
    )


def test_a_secret_that_only_shows_in_the_json_text_keeps_only_the_whole_digest() -> None:
    """A secret written as a number is not a string to redact; the whole object is digested."""
    recorded, spill = record_arguments({"pin": 84736251, "path": "a"}, ["84736251"])

    assert ("",) == recorded.bounded
    assert "84736251" not in compact_json(recorded.arguments)
    assert spill is not None
    assert "84736251" not in spill


def test_a_long_value_nested_at_the_deepest_level_keeps_the_whole_digest() -> None:
    """Bounding a value at the journal's nesting limit would nest too deep: the whole is kept."""
    nested: JsonValue = "d" * (VALUE_LIMIT + 1)
    for _ in range(64):
        nested = [nested]

    recorded, spill = record_arguments({"deep": nested}, [])

    assert ("",) == recorded.bounded
    assert spill is not None


def test_pointers_that_repeat_a_long_key_count_towards_the_limit() -> None:
    """Long values under one long key would make long pointers: the whole is digested."""
    key = "k" * (VALUE_LIMIT - 10)
    arguments: dict[str, JsonValue] = {key: {f"v{i}": "v" * (VALUE_LIMIT + 1) for i in range(16)}}

    recorded, spill = record_arguments(arguments, [])

    assert ("",) == recorded.bounded
    assert spill is not None
