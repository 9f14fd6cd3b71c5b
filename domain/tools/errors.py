"""Typed errors of the tool registry and exposure; domain layer."""

from __future__ import annotations

from domain.errors import DomainError


class ToolError(DomainError):
    """A tool registration or lookup failed."""


class DuplicateToolError(ToolError):
    """Two tools were registered under one name."""


class UnknownToolError(ToolError):
    """No tool of that name is registered."""
