"""Failover between model candidates as data: classify, then rotate, fall back or surface.

A chain lists models in order, each with its credential profiles. A failure is classified
first; the class decides whether another profile of the same model, the next model, a wait
on the same candidate, or nobody can fix it. Time comes in as an argument, so the same
failures decide the same way on replay. Domain layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class FailureKind(StrEnum):
    """Why a model request failed, as far as failover cares."""

    RATE_LIMITED = "rate_limited"
    TRANSIENT = "transient"
    CONTEXT_OVERFLOW = "context_overflow"
    AUTH = "auth"
    BILLING = "billing"
    BAD_REQUEST = "bad_request"


class FailoverAction(StrEnum):
    """What to do after a failed request."""

    ROTATE_PROFILE = "rotate_profile"
    FALLBACK_MODEL = "fallback_model"
    RETRY_AFTER_WAIT = "retry_after_wait"
    SURFACE_ERROR = "surface_error"


CONTEXT_MARKERS = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "too many tokens",
    "prompt is too long",
)
BILLING_MARKERS = ("billing", "quota", "credit", "insufficient_quota", "payment")


STATUS_KINDS = {
    401: FailureKind.AUTH,
    402: FailureKind.BILLING,
    403: FailureKind.AUTH,
    408: FailureKind.TRANSIENT,
    409: FailureKind.TRANSIENT,
    429: FailureKind.RATE_LIMITED,
}
SERVER_ERRORS = 500


def classify(
    status: int | None, message: str = "", *, timed_out: bool = False, connection_lost: bool = False
) -> FailureKind:
    """The failure class of an HTTP status and error message, or of a broken connection.

    The wording wins over the status where providers disagree on statuses: a context
    overflow is a 400 at one provider and a 413 or a 422 at another, and an exhausted quota
    is a 429 at OpenAI.
    """
    text = message.lower()
    if timed_out or connection_lost or status is None:
        kind = FailureKind.TRANSIENT
    elif any(marker in text for marker in CONTEXT_MARKERS):
        kind = FailureKind.CONTEXT_OVERFLOW
    elif any(marker in text for marker in BILLING_MARKERS):
        kind = FailureKind.BILLING
    elif status >= SERVER_ERRORS:
        kind = FailureKind.TRANSIENT
    else:
        kind = STATUS_KINDS.get(status, FailureKind.BAD_REQUEST)
    return kind


@dataclass(frozen=True)
class Candidate:
    """One way to ask: a provider's model with one credential profile."""

    provider: str
    model: str
    profile: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.model} ({self.profile})"


@dataclass(frozen=True)
class ModelChoice:
    """A model of the chain and the credential profiles that may ask it, in order."""

    provider: str
    model: str
    profiles: tuple[str, ...]


@dataclass(frozen=True)
class FailoverPolicy:
    """The limits of failover, from the `[agent]` configuration."""

    retry_after_cap: float = 60.0
    """The longest wait a provider's retry-after is honoured for, in seconds."""
    cooldown: float = 60.0
    """How long a profile that failed on auth, billing or a rate limit is put back."""
    transient_wait: float = 1.0
    """The wait before asking the same candidate again after a transient failure."""
    fall_back: bool = True
    """False when the user chose the model explicitly: profiles rotate, models do not."""


@dataclass(frozen=True)
class Failure:
    """One failed request: who was asked, how it failed, and what the provider said."""

    candidate: Candidate
    kind: FailureKind
    status: int | None = None
    retry_after: float | None = None
    message: str = ""


@dataclass(frozen=True)
class Decision:
    """What failover decided after a failure: the next candidate and any wait before it."""

    action: FailoverAction
    candidate: Candidate | None = None
    wait: float = 0.0
    attempts: tuple[Failure, ...] = ()
    """Every failure so far, in order: what a surfaced error lists."""


@dataclass
class Failover:
    """The failover state of one model request: the chain, cooldowns, and what failed.

    Cooldowns are kept by the caller across requests (`cooling`, profile → time it may be
    used again), so a profile that failed a moment ago goes to the back of the next request
    too.
    """

    chain: tuple[ModelChoice, ...]
    policy: FailoverPolicy = field(default_factory=FailoverPolicy)
    cooling: dict[tuple[str, str], float] = field(default_factory=dict)
    attempts: list[Failure] = field(default_factory=list)
    _model: int = 0
    _retried: set[Candidate] = field(default_factory=set)

    def __post_init__(self) -> None:
        if not self.chain or any(not choice.profiles for choice in self.chain):
            msg = "a failover chain needs at least one model, each with a credential profile"
            raise ValueError(msg)

    def first(self, now: float) -> Candidate:
        """The candidate to ask first: the first model's best profile at `now`."""
        profile = self._profiles(self.chain[0], now)[0]
        return Candidate(self.chain[0].provider, self.chain[0].model, profile)

    def after(self, failure: Failure, now: float) -> Decision:
        """Record `failure` at `now` and decide what to ask next, if anything."""
        self.attempts.append(failure)
        kind, candidate = failure.kind, failure.candidate
        if kind in (FailureKind.AUTH, FailureKind.BILLING, FailureKind.RATE_LIMITED):
            self._cool(candidate, failure, now)
        if kind is FailureKind.BAD_REQUEST:
            return self._surface()
        if kind is FailureKind.CONTEXT_OVERFLOW:
            return self._fall_back(now) or self._surface()
        if kind is FailureKind.TRANSIENT:
            return (
                self._retry(candidate, self.policy.transient_wait)
                or self._fall_back(now)
                or self._surface()
            )
        rotated = self._rotate(candidate, now)
        if rotated is not None:
            return rotated
        if kind is FailureKind.RATE_LIMITED and failure.retry_after is not None:
            waited = self._retry(candidate, failure.retry_after)
            if waited is not None:
                return waited
        return self._fall_back(now) or self._surface()

    # -- decisions -------------------------------------------------------------------------

    def _rotate(self, failed: Candidate, now: float) -> Decision | None:
        choice = self.chain[self._model]
        tried = {a.candidate.profile for a in self.attempts if a.candidate.model == choice.model}
        for profile in self._profiles(choice, now):
            if profile not in tried and not self._is_cooling(choice, profile, now):
                candidate = Candidate(choice.provider, choice.model, profile)
                if candidate != failed:
                    return self._decide(FailoverAction.ROTATE_PROFILE, candidate)
        return None

    def _fall_back(self, now: float) -> Decision | None:
        if not self.policy.fall_back:
            return None
        while self._model + 1 < len(self.chain):
            self._model += 1
            choice = self.chain[self._model]
            usable = [
                p for p in self._profiles(choice, now) if not self._is_cooling(choice, p, now)
            ]
            if usable:
                candidate = Candidate(choice.provider, choice.model, usable[0])
                return self._decide(FailoverAction.FALLBACK_MODEL, candidate)
        return None

    def _retry(self, candidate: Candidate, wait: float) -> Decision | None:
        """The same candidate after `wait`, once per candidate and never past the cap."""
        if candidate in self._retried or wait > self.policy.retry_after_cap:
            return None
        self._retried.add(candidate)
        return self._decide(FailoverAction.RETRY_AFTER_WAIT, candidate, max(wait, 0.0))

    def _surface(self) -> Decision:
        return self._decide(FailoverAction.SURFACE_ERROR, None)

    def _decide(
        self, action: FailoverAction, candidate: Candidate | None, wait: float = 0.0
    ) -> Decision:
        return Decision(action, candidate, wait, tuple(self.attempts))

    # -- cooldowns -------------------------------------------------------------------------

    def _cool(self, candidate: Candidate, failure: Failure, now: float) -> None:
        pause = self.policy.cooldown
        if failure.retry_after is not None:
            pause = max(pause, min(failure.retry_after, self.policy.retry_after_cap))
        key = (candidate.model, candidate.profile)
        self.cooling[key] = max(self.cooling.get(key, now), now + pause)

    def _is_cooling(self, choice: ModelChoice, profile: str, now: float) -> bool:
        return self.cooling.get((choice.model, profile), now) > now

    def _profiles(self, choice: ModelChoice, now: float) -> list[str]:
        """The model's profiles, those cooling down at the back (soonest usable first)."""
        ready = [p for p in choice.profiles if not self._is_cooling(choice, p, now)]
        cooling = sorted(
            (p for p in choice.profiles if self._is_cooling(choice, p, now)),
            key=lambda p: self.cooling[(choice.model, p)],
        )
        return ready + cooling


def surfaced_error_text(attempts: tuple[Failure, ...]) -> str:
    """The error a user reads when failover gives up: every attempt, one per line."""
    lines = ["every model candidate failed:"]
    for failure in attempts:
        status = f" (HTTP {failure.status})" if failure.status is not None else ""
        detail = f": {failure.message}" if failure.message else ""
        lines.append(f"- {failure.candidate}: {failure.kind}{status}{detail}")
    return "\n".join(lines)
