"""Policy decisions, approvals and denials of tool calls; domain layer.

The closed vocabularies an authorization attempt is decided with, the standing grants an
approval leaves behind, and which denial an unfavourable approval verdict brings.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from domain.base import Value
from domain.paths import CanonicalPath
from domain.text import GrantKey


class PolicyDecision(StrEnum):
    """What one policy evaluation concluded for an attempt."""

    ALLOW = "allow"
    DENY = "deny"
    APPROVAL_REQUIRED = "approval_required"


class ApprovalMode(StrEnum):
    """How a call that needs consent is handled."""

    REQUEST = "request"
    DEFER = "defer"
    REPORT = "report"
    DENY = "deny"


class ApprovalVerdict(StrEnum):
    """The operator's answer to an approval request."""

    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"


class ApprovalScope(StrEnum):
    """How far an approval reaches beyond this one call."""

    ONCE = "once"
    SESSION = "session"
    DIRECTORY = "directory"


class DenialCategory(StrEnum):
    """Why an attempt was denied; a denial is terminal."""

    POLICY = "policy"
    NOT_EXPOSED = "not_exposed"
    OUTSIDE_ROOTS = "outside_roots"
    PROTECTED_PATH = "protected_path"
    LINK_BOUNDARY = "link_boundary"
    SHELL_POLICY = "shell_policy"
    APPROVAL_REJECTED = "approval_rejected"
    APPROVAL_EXPIRED = "approval_expired"
    TARGET_CHANGED = "target_changed"
    INVALID_INPUT = "invalid_input"
    RUN_ENDED = "run_ended"
    NO_APPROVER = "no_approver"
    SANDBOX_UNAVAILABLE = "sandbox_unavailable"


class FileOperation(StrEnum):
    """The authorization category requested for a path."""

    READ = "read"
    WRITE = "write"
    ATTACH = "attach"
    DECLARE_PROJECT_SCOPE = "declare_project_scope"


_VERDICT_DENIALS = {
    ApprovalVerdict.REJECTED: DenialCategory.APPROVAL_REJECTED,
    ApprovalVerdict.EXPIRED: DenialCategory.APPROVAL_EXPIRED,
}


def denial_for_verdict(verdict: ApprovalVerdict) -> DenialCategory:
    """The denial an attempt gets when its approval is `verdict`; an approval denies nothing."""
    denial = _VERDICT_DENIALS.get(verdict)
    if denial is None:
        msg = f"an approval verdict of {verdict} denies nothing"
        raise ValueError(msg)
    return denial


class ApprovalGrant(Value):
    """A standing approval: calls with this grant key skip the prompt.

    A grant with a directory covers only calls whose every target lies under it. A grant
    never widens a path access decision; it only answers the approval question.
    """

    key: GrantKey = Field(min_length=1)
    directory: CanonicalPath | None = None
