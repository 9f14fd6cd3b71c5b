"""Recorded arguments never hold a secret and stay inside their bounds; properties."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st
from pydantic import JsonValue

from domain.tools.arguments import ARGUMENTS_LIMIT, WHOLE, compact_json, record_arguments
from domain.tools.output import REDACTED
from domain.values.receipts import RecordedArguments

SECRETS = st.lists(
    st.text("abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=4, max_size=12).filter(
        lambda s: s not in REDACTED
    ),
    min_size=1,
    max_size=3,
)
"""Secret values; one inside the redaction mark itself (`dact`) could never be hidden by it."""


@st.composite
def arguments_with(draw: st.DrawFn, secrets: list[str]) -> dict[str, JsonValue]:
    """Argument objects whose strings, keys and numbers may hold the secrets, short or long."""
    pieces = st.sampled_from(secrets) | st.text(max_size=30) | st.just("x" * 700)
    texts = st.lists(pieces, max_size=5).map("".join)
    numbers = st.sampled_from([int(s) for s in secrets if s.isdigit()] or [0]) | st.integers()
    values = st.recursive(
        texts | numbers | st.booleans() | st.none(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
        max_leaves=20,
    )
    return draw(st.dictionaries(texts, values, max_size=5))


@given(data=st.data(), secrets=SECRETS)
def test_no_secret_reaches_the_recorded_arguments_or_their_spill(
    data: st.DataObject, secrets: list[str]
) -> None:
    """Whatever the arguments hold, neither the recorded JSON nor the spill text has a secret."""
    arguments = data.draw(arguments_with(secrets))

    recorded, spill = record_arguments(arguments, secrets)

    text = compact_json(recorded.arguments)
    assert [] == [s for s in secrets if s in text or (spill is not None and s in spill)]


@given(data=st.data(), secrets=SECRETS)
def test_recorded_arguments_are_bounded_and_say_what_was_bounded(
    data: st.DataObject, secrets: list[str]
) -> None:
    """The record fits its limit, is a valid value, and a spill exists exactly when bounded."""
    arguments = data.draw(arguments_with(secrets))

    recorded, spill = record_arguments(arguments, secrets)

    assert recorded == RecordedArguments.model_validate(recorded.model_dump())
    assert len(compact_json(recorded.arguments).encode()) <= ARGUMENTS_LIMIT
    assert bool(recorded.bounded) == (spill is not None)
    if recorded.bounded == (WHOLE,):
        assert spill is not None
        assert hashlib.sha256(spill.encode()).hexdigest() == recorded.arguments["sha256"]
