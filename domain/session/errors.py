"""Typed refusals of Session commands; domain layer. No event is recorded when one is raised."""

from __future__ import annotations

from domain.errors import DomainError


class SessionError(DomainError):
    """A Session command broke an invariant."""


class InvalidSessionLinkError(SessionError):
    """A subagent must name its parent; a main session must not."""


class StorageAlreadyBoundError(SessionError):
    """The storage binding is fixed once; it is never recomputed."""


class UnknownRunError(SessionError):
    """The run was never started in this session."""


class RunAlreadyStartedError(SessionError):
    """A run with this id already exists in this session."""


class ClientRunAlreadyStartedError(SessionError):
    """The client run id was used before; the retry belongs to the existing run."""

    def __init__(self, client_run_id: str, run_id: str) -> None:
        super().__init__(f"client run {client_run_id!r} already started as {run_id}")
        self.client_run_id = client_run_id
        self.run_id = run_id


class RunEndedError(SessionError):
    """Nothing is appended to a run that has ended."""


class StaleWriterError(SessionError):
    """The run is not the session's current writer; another run took over."""


class UnknownAttemptError(SessionError):
    """No authorization attempt with this id exists in this session."""


class AttemptAlreadyStartedError(SessionError):
    """An authorization attempt with this id already exists."""


class AttemptAlreadyEndedError(SessionError):
    """The attempt already has its one terminal outcome."""


class AttemptRunMismatchError(SessionError):
    """The attempt belongs to another run."""


class PolicyAlreadyEvaluatedError(SessionError):
    """The attempt's policy decision is already recorded."""


class ApprovalNotRequiredError(SessionError):
    """Approval can be requested only after policy asked for it."""


class ApprovalNotPendingError(SessionError):
    """An approval decision needs a pending request."""


class ReceiptWithoutAllowError(SessionError):
    """A receipt needs a prior allow decision for its attempt."""


class DenialCategoryMissingError(SessionError):
    """A deny decision must say which category denied the attempt."""


class InvalidApprovalScopeError(SessionError):
    """An approval's scope does not fit the request (a directory missing or unexpected)."""


class SessionClosedError(SessionError):
    """The session was closed; it starts no more runs and is not closed twice."""
