"""Tests for the opaque id value objects and canonical paths; unit tests of the domain."""

from __future__ import annotations

import re
import uuid

import pytest
from pydantic import BaseModel, ValidationError

from domain.ids import AttemptId, CallId, DeviceId, OpaqueId, RunId, SessionId, SpillId
from domain.paths import MAX_PATH_LENGTH, CanonicalPath, check_canonical

ID_TYPES: list[tuple[type[OpaqueId], str]] = [
    (SessionId, "ses_"),
    (RunId, "run_"),
    (AttemptId, "att_"),
    (DeviceId, "dev_"),
    (SpillId, "spl_"),
]
HEX = "0123456789abcdef" * 2


class Carrier(BaseModel):
    """A model holding ids, as events and state do."""

    session_id: SessionId
    call_id: CallId


@pytest.mark.parametrize(("id_type", "prefix"), ID_TYPES)
def test_new_id_is_its_prefix_and_32_hex_digits(id_type: type[OpaqueId], prefix: str) -> None:
    """A fresh id is the type's prefix followed by 32 lowercase hex digits."""
    made = id_type.new()
    assert re.fullmatch(rf"{prefix}[0-9a-f]{{32}}", made)
    assert (id_type, made[len(prefix) :]) == (type(made), made.hex)


@pytest.mark.parametrize(("id_type", "prefix"), ID_TYPES)
def test_new_ids_are_distinct(id_type: type[OpaqueId], prefix: str) -> None:
    """Two fresh ids of one type differ."""
    assert prefix == id_type.new()[: len(prefix)]
    assert id_type.new() != id_type.new()


@pytest.mark.parametrize(
    "value",
    [
        f"run_{HEX}",
        f"ses{HEX}",
        f"ses_{HEX[:-1]}",
        f"ses_{HEX}0",
        f"ses_{HEX.upper()}",
        f"SES_{HEX}",
        f"ses_{HEX[:-1]}g",
        f" ses_{HEX}",
        HEX,
        "",
    ],
    ids=[
        "other-prefix",
        "no-underscore",
        "short",
        "long",
        "uppercase-hex",
        "uppercase-prefix",
        "not-hex",
        "leading-space",
        "no-prefix",
        "empty",
    ],
)
def test_session_id_rejects_a_malformed_value(value: str) -> None:
    """Only the exact prefix and 32 lowercase hex digits make an id."""
    with pytest.raises(ValueError, match="not a valid SessionId"):
        SessionId(value)


def test_id_accepts_its_own_canonical_form() -> None:
    """A well-formed string becomes an id equal to that string."""
    assert f"ses_{HEX}" == SessionId(f"ses_{HEX}")


@pytest.mark.parametrize(("id_type", "prefix"), ID_TYPES)
def test_id_round_trips_through_a_uuid(id_type: type[OpaqueId], prefix: str) -> None:
    """from_uuid and as_uuid are inverses, and the hex digits are the UUID's."""
    value = uuid.UUID(int=0xABC)
    made = id_type.from_uuid(value)
    assert (f"{prefix}{value.hex}", value) == (made, made.as_uuid())
    fresh = id_type.new()
    assert fresh == id_type.from_uuid(fresh.as_uuid())


@pytest.mark.parametrize(
    "value",
    ["call_abc123", "toolu_01A09q90qw90lq917835lq9", "call-1.2:3", "x", "a" * 128],
    ids=["openai", "anthropic", "punctuation", "one-char", "max-length"],
)
def test_call_id_accepts_provider_style_ids(value: str) -> None:
    """Short printable provider ids are kept as they are."""
    assert value == CallId(value)


@pytest.mark.parametrize(
    "value",
    ["", "call 1", "call\t1", "a" * 129, "call/1", "call\n"],
    ids=["empty", "space", "tab", "too-long", "slash", "newline"],
)
def test_call_id_rejects_empty_spaced_or_long_values(value: str) -> None:
    """An empty, spaced, overlong or oddly punctuated call id is refused."""
    with pytest.raises(ValueError, match="not a valid CallId"):
        CallId(value)


def test_pydantic_serializes_ids_as_plain_strings() -> None:
    """Dumped ids are plain str, and validation turns strings back into ids."""
    session_id = SessionId.new()
    carrier = Carrier(session_id=session_id, call_id=CallId("call_1"))
    dumped = carrier.model_dump(mode="json")
    assert {"session_id": str(session_id), "call_id": "call_1"} == dumped
    assert (str, str) == (type(dumped["session_id"]), type(dumped["call_id"]))
    loaded = Carrier.model_validate_json(carrier.model_dump_json())
    assert (SessionId, CallId, session_id) == (
        type(loaded.session_id),
        type(loaded.call_id),
        loaded.session_id,
    )


@pytest.mark.parametrize(
    "fields",
    [{"session_id": f"run_{HEX}", "call_id": "c"}, {"session_id": f"ses_{HEX}", "call_id": "a b"}],
    ids=["wrong-prefix", "spaced-call-id"],
)
def test_pydantic_rejects_malformed_ids(fields: dict[str, str]) -> None:
    """A model refuses a malformed id with a validation error."""
    with pytest.raises(ValidationError):
        Carrier.model_validate(fields)


@pytest.mark.parametrize(
    "path", ["/", "/a", "/a/b", "/a.b/c..d/.e", "/" + "a" * (MAX_PATH_LENGTH - 1)]
)
def test_check_canonical_accepts_absolute_normalized_paths(path: str) -> None:
    """An absolute path with no empty or dot segments is canonical."""
    assert path == check_canonical(path)


@pytest.mark.parametrize(
    "path",
    [
        "",
        "a/b",
        "..",
        "/..",
        "/a/../b",
        "/.",
        "/a/./b",
        "//",
        "//a",
        "/a//b",
        "/a/",
        "/a\x00b",
        "/" + "a" * MAX_PATH_LENGTH,
    ],
    ids=[
        "empty",
        "relative",
        "bare-dotdot",
        "root-dotdot",
        "dotdot",
        "root-dot",
        "dot",
        "double-slash",
        "leading-double-slash",
        "inner-double-slash",
        "trailing-slash",
        "nul",
        "too-long",
    ],
)
def test_check_canonical_rejects_other_paths(path: str) -> None:
    """A relative, dotted, doubled, trailing-slash, NUL or overlong path is refused."""
    with pytest.raises(ValueError, match="path"):
        check_canonical(path)


def test_canonical_path_type_validates_in_models() -> None:
    """The annotated type applies the same check inside a pydantic model."""

    class Located(BaseModel):
        path: CanonicalPath

    assert "/a/b" == Located(path="/a/b").path
    with pytest.raises(ValidationError):
        Located(path="/a/../b")
