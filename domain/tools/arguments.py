"""What the journal keeps of a call's arguments: redacted of secrets, then bounded; domain layer.

Every string, keys included, is redacted first, so a secret never reaches the journal whole
or cut. A string longer than `VALUE_LIMIT` bytes is kept as its digest, size and first bytes;
if the result, with the pointers to what was bounded, is still larger than `ARGUMENTS_LIMIT`
bytes, the whole object is kept that way.
Digests are of the redacted text, so they match the spilled copy and reveal nothing more.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping

from pydantic import JsonValue, ValidationError

from domain.tools.output import redact
from domain.values.receipts import RecordedArguments

VALUE_LIMIT = 1024
"""Bytes of one string value kept as it is."""
HEAD_LIMIT = 200
"""Bytes of a bounded value's beginning that are kept."""
ARGUMENTS_LIMIT = 16_384
"""Bytes of the recorded arguments, as compact JSON, kept as they are."""
WHOLE = ""
"""The JSON pointer of the whole arguments object."""


def bounded_value(text: str, secrets: Iterable[str]) -> dict[str, JsonValue]:
    """`text` as its sha256, UTF-8 size and first bytes, all of its redacted form."""
    # Redacted before it is cut, so a cut never leaves part of a secret, only of the mark.
    data = redact(text, _secrets(secrets)).encode("utf-8")
    head = data[:HEAD_LIMIT].decode("utf-8", errors="ignore")
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "head": head}


def compact_json(value: JsonValue) -> str:
    """`value` as compact JSON text, non-ASCII characters as they are."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def record_arguments(
    arguments: Mapping[str, JsonValue], secrets: Iterable[str]
) -> tuple[RecordedArguments, str | None]:
    """The arguments as the journal records them, and the text to spill if any was bounded.

    The spill text is the whole redacted arguments object as compact JSON.
    """
    found = _secrets(secrets)
    bounded: list[str] = []
    kept = _walk(dict(arguments), found, WHOLE, bounded)
    text = compact_json(kept)
    # A secret can still show in the JSON text (a number, or one spanning a key and its
    # value); then, as when the text is too long, only the whole object's digest is kept.
    size = len(text.encode("utf-8")) + sum(len(pointer.encode("utf-8")) for pointer in bounded)
    if size <= ARGUMENTS_LIMIT and (not found or redact(text, found) == text):
        try:
            recorded = RecordedArguments(arguments=kept, bounded=tuple(bounded))
        except ValidationError:
            pass  # bounding nested a value one level too deep: keep the whole digest
        else:
            # Nothing bounded: the recorded arguments are whole, and nothing is spilled.
            return recorded, _whole(arguments, found) if bounded else None
    whole = _whole(arguments, found)
    replaced = RecordedArguments(arguments=bounded_value(whole, found), bounded=(WHOLE,))
    return replaced, whole


def _whole(arguments: Mapping[str, JsonValue], secrets: list[str]) -> str:
    """The whole arguments object, redacted, as compact JSON: the text a spill keeps."""
    return redact(compact_json(_walk(dict(arguments), secrets, WHOLE, None)), secrets)


def _secrets(secrets: Iterable[str]) -> list[str]:
    return sorted({s for s in secrets if s}, key=len, reverse=True)


def _walk(
    value: JsonValue, secrets: list[str], pointer: str, bounded: list[str] | None
) -> JsonValue:
    """`value` redacted and, when `bounded` collects pointers, with long strings bounded."""
    if isinstance(value, str):
        if bounded is not None and len(value.encode("utf-8")) > VALUE_LIMIT:
            bounded.append(pointer)
            return bounded_value(value, secrets)
        return redact(value, secrets)
    if isinstance(value, list):
        return [
            _walk(item, secrets, f"{pointer}/{index}", bounded) for index, item in enumerate(value)
        ]
    if isinstance(value, dict):
        result: dict[str, JsonValue] = {}
        for key, item in value.items():
            name = _unique(redact(key, secrets), result)
            result[name] = _walk(item, secrets, f"{pointer}/{_escape(name)}", bounded)
        return result
    return value


def _unique(name: str, taken: Mapping[str, object]) -> str:
    """`name`, or `name#2`, `name#3`…: two keys that redact alike both stay."""
    candidate, number = name, 1
    while candidate in taken:
        number += 1
        candidate = f"{name}#{number}"
    return candidate


def _escape(key: str) -> str:
    """A key as one JSON pointer reference token (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")
