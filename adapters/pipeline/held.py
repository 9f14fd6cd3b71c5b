"""A session as an authorization reads it, with its writes held for a later commit; adapter layer.

A call that stays inside (a read-only tool that reaches nothing beyond the trusted roots,
ADR 0023) is decided on a read of the session, and what the decision records is held
rather than committed: the attempt's start, its policy decision, a correction. The call's
next journal write (its receipt, or a cancellation) applies the held writes first, on the
latest session, so the attempt is stored whole in one transaction.

`SessionFacts` names what an authorization reads and writes; the aggregate has all of it,
and `HeldSession` has it too, reading through to a session and holding every write.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import methodcaller
from typing import Any, Protocol

from domain.session.aggregate import Session
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import ApprovalGrant
from domain.values.storage import WorkingContext

Write = Callable[[Session], object]
"""One held command on a session."""


class SessionFacts(Protocol):
    """What an authorization reads of a session, and the commands it records its decision with."""

    @property
    def kind(self) -> SessionKind:
        """Main session or subagent."""
        ...

    @property
    def audience(self) -> Audience:
        """Whose session it is."""
        ...

    @property
    def working_context(self) -> WorkingContext:
        """The declared project and the files worked on."""
        ...

    @property
    def loaded_tools(self) -> frozenset[str]:
        """The deferred tools loaded so far."""
        ...

    @property
    def approval_grants(self) -> tuple[ApprovalGrant, ...]:
        """Standing approvals."""
        ...

    def start_attempt(self, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401 - Session's own signature
        """Open a call's authorization attempt."""

    def evaluate_policy(self, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401 - Session's own signature
        """Record the policy decision."""

    def request_approval(self, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401 - Session's own signature
        """Record that an operator is asked."""

    def issue_correction(self, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401 - Session's own signature
        """End the attempt with an instruction for the model."""

    def record_receipt(self, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401 - Session's own signature
        """End the attempt with its receipt."""


class HeldSession:
    """Reads through to `session`; every command is held in `writes`, in order, not applied.

    The session is read while the journal's lock on it is held, so the reads are taken
    once, at construction: the decision is made from the state as it was then.
    """

    def __init__(self, session: Session) -> None:
        self.kind = session.kind
        self.audience = session.audience
        self.working_context = session.working_context
        self.loaded_tools = session.loaded_tools
        self.approval_grants = session.approval_grants
        self.writes: list[Write] = []

    def _hold(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.writes.append(methodcaller(name, *args, **kwargs))

    def start_attempt(self, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401 - Session's own signature
        """Held: `Session.start_attempt`."""
        self._hold("start_attempt", args, kwargs)

    def evaluate_policy(self, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401 - Session's own signature
        """Held: `Session.evaluate_policy`."""
        self._hold("evaluate_policy", args, kwargs)

    def request_approval(self, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401 - Session's own signature
        """Held: `Session.request_approval`."""
        self._hold("request_approval", args, kwargs)

    def issue_correction(self, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401 - Session's own signature
        """Held: `Session.issue_correction`."""
        self._hold("issue_correction", args, kwargs)

    def record_receipt(self, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401 - Session's own signature
        """Held: `Session.record_receipt`."""
        self._hold("record_receipt", args, kwargs)
