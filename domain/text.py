"""Text and JSON value types that the journal can always store as they are; domain layer.

JSON has no NaN or infinity, the journal's encoder handles integers of at most 64 bits, and a
lone surrogate is not UTF-8. A value outside these limits would be changed or refused when
stored, so it is refused when built instead.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import AfterValidator, Field, JsonValue

INT_MIN = -(2**63)
INT_MAX = 2**64 - 1
MAX_DEPTH = 64


def check_text(value: str) -> str:
    """Return `value` if it is valid UTF-8 (no lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        msg = "text contains a lone surrogate, which is not valid UTF-8"
        raise ValueError(msg) from None
    return value


def check_json(value: JsonValue, depth: int = 0) -> JsonValue:
    """Return `value` if the journal can store it exactly, else raise ValueError."""
    if depth > MAX_DEPTH:
        msg = f"JSON value nests deeper than {MAX_DEPTH} levels"
        raise ValueError(msg)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int) and not INT_MIN <= value <= INT_MAX:
        msg = "integer does not fit in 64 bits"
        raise ValueError(msg)
    if isinstance(value, float) and not math.isfinite(value):
        msg = "JSON has no NaN or infinity"
        raise ValueError(msg)
    if isinstance(value, str):
        check_text(value)
    elif isinstance(value, list):
        for item in value:
            check_json(item, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(key)
            check_json(item, depth + 1)
    return value


def _check_arguments(value: dict[str, JsonValue]) -> dict[str, JsonValue]:
    check_json(value)
    return value


Text = Annotated[str, AfterValidator(check_text)]
ShortText = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(check_text)]
Detail = Annotated[str, Field(max_length=2000), AfterValidator(check_text)]
GrantKey = Annotated[str, Field(max_length=2000), AfterValidator(check_text)]
"""What a standing approval covers; empty when a request can only be approved once."""
JsonArguments = Annotated[dict[str, JsonValue], AfterValidator(_check_arguments)]
