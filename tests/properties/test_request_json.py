"""A request's canonical JSON, built from its parts, is exactly the JSON of its whole dump."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from domain.agent.encoding import canonical_json, message_json, request_json
from domain.agent.replies import ModelRequest, ToolSpec
from tests import strategies

requests = st.builds(
    ModelRequest,
    prefix=st.text(),
    suffix=st.text(),
    messages=st.lists(strategies.chat_messages(), max_size=4).map(tuple),
    tools=st.lists(
        st.builds(
            ToolSpec,
            name=strategies.tool_names(),
            description=st.text(),
            parameters=strategies.json_arguments(),
        ),
        max_size=3,
    ).map(tuple),
    max_output_tokens=st.integers(min_value=1, max_value=2**31),
)


@given(requests)
def test_the_json_built_from_parts_equals_the_json_of_the_dump(request: ModelRequest) -> None:
    """Digests and estimates over the cheap form are the ones over the whole request."""
    whole = canonical_json(request.model_dump(mode="json"))

    assert whole == request_json(request)
    assert whole == request_json(request, [message_json(m) for m in request.messages])
