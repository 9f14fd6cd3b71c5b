"""Where a session's files live and what it is working on; domain layer.

The storage envelope is bound once. The working context (the declared project, recently
used files) follows successful receipts in a main session; a subagent keeps its working
context for the run only, so its stream records no context change.
"""

from __future__ import annotations

from typing import ClassVar

from domain.ids import RunId
from domain.session import errors
from domain.session.events import StorageBound, WorkingContextChanged
from domain.session.part import Appliers, SessionPart
from domain.values.audience import SessionKind
from domain.values.receipts import ToolReceipt
from domain.values.storage import StorageBinding, WorkingContext


class ContextPart(SessionPart):
    """Binding the storage envelope, and moving the working context after receipts."""

    def bind_storage(self, layout_version: int, envelope_root: str) -> None:
        """Fix the storage envelope; a second binding is refused, even an identical one."""
        if self.storage is not None:
            msg = f"storage is already bound at {self.storage.envelope_root}"
            raise errors.StorageAlreadyBoundError(msg)
        binding = StorageBinding(layout_version=layout_version, envelope_root=envelope_root)
        self.trigger_event(StorageBound, **binding.model_dump())

    def _follow_receipt(self, run_id: RunId, receipt: ToolReceipt) -> None:
        if receipt.has_state_effect and self.kind is SessionKind.MAIN:
            context = self.working_context.after(receipt)
            if context != self.working_context:
                self.trigger_event(WorkingContextChanged, run_id=run_id, **dict(context))

    # -- state changes ---------------------------------------------------------------------

    def _storage_bound(self, event: StorageBound) -> None:
        self.storage = StorageBinding(
            layout_version=event.layout_version, envelope_root=event.envelope_root
        )

    def _working_context_changed(self, event: WorkingContextChanged) -> None:
        self.working_context = WorkingContext(
            project_directory=event.project_directory, recent_files=event.recent_files
        )

    APPLIERS: ClassVar[Appliers] = (_storage_bound, _working_context_changed)
