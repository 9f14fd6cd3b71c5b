"""Opaque identifier value objects; domain layer.

Every id is a prefixed random hex string. It carries no user data and grants no authority:
the prefix only tells a reader which kind of thing it names.
"""

from __future__ import annotations

import re
import secrets
import uuid
from functools import lru_cache
from typing import Any, ClassVar, Self

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema


@lru_cache(maxsize=4096)
def _uuid_of(digits: str) -> uuid.UUID:
    """The UUID of 32 hex digits; a session's stream id is asked for on every update."""
    return uuid.UUID(hex=digits)


class OpaqueId(str):
    """A prefixed 128-bit random identifier, serialized as a plain string."""

    __slots__ = ()
    prefix: ClassVar[str] = ""
    _pattern: ClassVar[re.Pattern[str]] = re.compile(r"^[0-9a-f]{32}$")

    def __new__(cls, value: str) -> Self:
        """Validate `value` and return it as this id type."""
        if not isinstance(value, str) or not cls._pattern.fullmatch(value):
            msg = f"not a valid {cls.__name__}: {value!r}"
            raise ValueError(msg)
        return super().__new__(cls, value)

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._pattern = re.compile(rf"^{re.escape(cls.prefix)}[0-9a-f]{{32}}$")

    @classmethod
    def new(cls) -> Self:
        """Return a fresh random id."""
        return cls(f"{cls.prefix}{secrets.token_hex(16)}")

    @classmethod
    def from_uuid(cls, value: uuid.UUID) -> Self:
        """Return the id whose hex digits are those of `value`."""
        return cls(f"{cls.prefix}{value.hex}")

    @property
    def hex(self) -> str:
        """The 32 hex digits without the prefix."""
        return self[len(self.prefix) :]

    def as_uuid(self) -> uuid.UUID:
        """The id as a UUID (the journal's stream identifier)."""
        return _uuid_of(self.hex)

    @classmethod
    def __get_pydantic_core_schema__(
        cls, _source: type[Any], _handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(
            cls,
            core_schema.str_schema(),
            serialization=core_schema.plain_serializer_function_ser_schema(str),
        )


class SessionId(OpaqueId):
    """Names one session stream (a main session or a subagent run)."""

    __slots__ = ()
    prefix = "ses_"


class RunId(OpaqueId):
    """Names one execution inside a session."""

    __slots__ = ()
    prefix = "run_"


class AttemptId(OpaqueId):
    """Joins the lifecycle events of one authorization attempt."""

    __slots__ = ()
    prefix = "att_"


class DeviceId(OpaqueId):
    """Names one paired device."""

    __slots__ = ()
    prefix = "dev_"


class SpillId(OpaqueId):
    """Names one spilled tool result kept in session-owned storage."""

    __slots__ = ()
    prefix = "spl_"


class AttachmentId(OpaqueId):
    """Names one file a user sent with a message, or one the agent attached to its reply."""

    __slots__ = ()
    prefix = "fil_"


_CALL_ID = re.compile(r"^[A-Za-z0-9_.:\-]{1,128}$")


class CallId(str):
    """The provider-authored tool-call identifier: opaque, short, printable, no spaces."""

    __slots__ = ()

    def __new__(cls, value: str) -> Self:
        """Validate `value` and return it as a call id."""
        if not isinstance(value, str) or not _CALL_ID.fullmatch(value):
            msg = f"not a valid CallId: {value!r}"
            raise ValueError(msg)
        return super().__new__(cls, value)

    @classmethod
    def __get_pydantic_core_schema__(
        cls, _source: type[Any], _handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(
            cls,
            core_schema.str_schema(),
            serialization=core_schema.plain_serializer_function_ser_schema(str),
        )
