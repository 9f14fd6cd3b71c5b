"""What a standing approval covers, and which calls need asking; domain layer."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from domain.authorization.facts import is_within
from domain.base import Value
from domain.ids import AttemptId, CallId, SessionId
from domain.paths import CanonicalPath
from domain.text import Detail, GrantKey, ShortText
from domain.values.authorization import ApprovalGrant, ApprovalMode, ApprovalScope, ApprovalVerdict
from domain.values.conversation import ToolName

MAX_GRANT_KEY = 2000


def grant_key(tool_name: str, subject: str | None = None) -> str:
    """The key a session approval of this call is stored under.

    A tool with a subject (the shell: its exact command text and working directory) is keyed
    by it, so approving `rm 'old file.txt'` never approves `rm old file.txt`, and
    `printf '' > a` never `printf '' > b`; any other tool by its name. An over-long key
    cannot be granted.
    """
    if subject is None:
        return tool_name
    key = f"{tool_name}: {subject}"
    return key if len(key) <= MAX_GRANT_KEY else ""


def covering_grant(
    grants: Iterable[ApprovalGrant], key: str, targets: Sequence[str]
) -> ApprovalGrant | None:
    """The first grant that answers this call's approval question, if any.

    A directory grant covers a call only when the call names at least one path and every
    path lies under the grant's directory.
    """
    if not key:
        return None
    for grant in grants:
        if grant.key != key:
            continue
        if grant.directory is None:
            return grant
        directory = grant.directory
        if targets and all(is_within(target, directory) for target in targets):
            return grant
    return None


class ApprovalRequest(Value):
    """What an operator is asked: one call, its targets, and whether it can be granted wider."""

    session_id: SessionId
    attempt_id: AttemptId
    call_id: CallId
    tool_name: ToolName
    summary: Detail
    targets: tuple[CanonicalPath, ...] = ()
    mode: ApprovalMode
    grant_key: GrantKey = ""


class ApprovalAnswer(Value):
    """An operator's answer; a scope wider than once needs the request's grant key."""

    verdict: ApprovalVerdict
    decided_by: ShortText
    scope: ApprovalScope = ApprovalScope.ONCE
    directory: CanonicalPath | None = None
