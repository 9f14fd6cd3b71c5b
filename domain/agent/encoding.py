"""The canonical JSON a model request is digested and estimated over; domain layer.

Sorted keys, no spaces, characters kept as they are. A request's text is built from its
parts, so a run encodes each message once, when it is appended, rather than the whole
growing request every turn; `tests/properties/test_request_json.py` holds the two equal.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from domain.agent.replies import ModelRequest, ToolSpec
from domain.values.conversation import ChatMessage


def canonical_json(value: object) -> str:
    """The JSON text digests are taken of: sorted keys, no spaces, characters kept as they are."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tools_json(tools: Sequence[ToolSpec]) -> str:
    """The canonical JSON of a tool set."""
    return canonical_json([tool.model_dump(mode="json") for tool in tools])


def message_json(message: ChatMessage) -> str:
    """One message's canonical JSON."""
    return canonical_json(message.model_dump(mode="json"))


def request_json(
    request: ModelRequest,
    message_texts: Sequence[str] | None = None,
    tools_text: str | None = None,
) -> str:
    """The request's canonical JSON, the same text `canonical_json` gives of its dump.

    Built from its parts in sorted key order, so the messages' and tools' texts, given, are
    reused rather than encoded again.
    """
    texts = message_texts if message_texts is not None else map(message_json, request.messages)
    tools = tools_text if tools_text is not None else tools_json(request.tools)
    return (
        f'{{"max_output_tokens":{request.max_output_tokens},'
        f'"messages":[{",".join(texts)}],'
        f'"prefix":{canonical_json(request.prefix)},'
        f'"suffix":{canonical_json(request.suffix)},'
        f'"tools":{tools}}}'
    )
