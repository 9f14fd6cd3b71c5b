"""Where a session's files live and what it is working on; domain layer.

The storage binding fixes a session's layout version and envelope root once; the working
context follows successful receipts with a declared project and recently used files.
"""

from __future__ import annotations

from pydantic import Field

from domain.base import Value
from domain.paths import CanonicalPath
from domain.values.receipts import ToolReceipt

LAYOUT_VERSION_MAX = 1_000_000
"""Storage layout versions are small integers; anything larger is a mistake."""
RECENT_FILES_LIMIT = 20
"""How many recently used files the working context keeps."""


class StorageBinding(Value):
    """The durable layout version and envelope root of a session; bound at most once."""

    layout_version: int = Field(ge=1, le=LAYOUT_VERSION_MAX)
    envelope_root: CanonicalPath


class WorkingContext(Value):
    """The declared project directory and a bounded list of recently used files."""

    project_directory: CanonicalPath | None = None
    recent_files: tuple[CanonicalPath, ...] = Field(default=(), max_length=RECENT_FILES_LIMIT)

    def after(self, receipt: ToolReceipt) -> WorkingContext:
        """Return the context that follows a successful receipt with a state effect."""
        recent = list(self.recent_files)
        for activity in receipt.file_activity:
            if activity.path in recent:
                recent.remove(activity.path)
            recent.insert(0, activity.path)
        project = receipt.project_declaration or self.project_directory
        return WorkingContext(
            project_directory=project, recent_files=tuple(recent[:RECENT_FILES_LIMIT])
        )
