"""The session's transcript and the tool schemas its model can see; domain layer.

The MessageAppended events are the durable transcript; the aggregate keeps only a count,
so its state and snapshots stay small however long the conversation grows.
"""

from __future__ import annotations

from typing import ClassVar

from domain.ids import RunId
from domain.session.events import MessageAppended, ToolSchemaLoaded
from domain.session.part import Appliers, SessionPart
from domain.values.conversation import ChatMessage


class ConversationPart(SessionPart):
    """Appending messages on behalf of the writer, and loading deferred tool schemas."""

    def append_message(self, run_id: RunId, message: ChatMessage) -> None:
        """Append a message to the transcript on behalf of the current writer."""
        self._require_writer(run_id)
        self.trigger_event(MessageAppended, run_id=run_id, message=message)

    def load_tool_schema(self, run_id: RunId, tool_name: str) -> None:
        """Make a deferred tool's schema visible to later requests; it grants no authority."""
        self._require_writer(run_id)
        if tool_name not in self.loaded_tools:
            self.trigger_event(ToolSchemaLoaded, run_id=run_id, tool_name=tool_name)

    # -- state changes ---------------------------------------------------------------------

    def _message_appended(self, event: MessageAppended) -> None:
        self.message_count += 1
        self._follow_agent_message(event)

    def _tool_schema_loaded(self, event: ToolSchemaLoaded) -> None:
        self.loaded_tools = self.loaded_tools | {event.tool_name}

    APPLIERS: ClassVar[Appliers] = (_message_appended, _tool_schema_loaded)
