"""Failover between model candidates: classification, rotation, fallback, cooldowns; unit tests."""

from __future__ import annotations

import pytest

from domain.agent.failover import (
    Candidate,
    Decision,
    Failover,
    FailoverAction,
    FailoverPolicy,
    Failure,
    FailureKind,
    ModelChoice,
    classify,
    surfaced_error_text,
)

MAIN = ModelChoice("openai", "gpt-main", ("work", "personal"))
SPARE = ModelChoice("anthropic", "claude-spare", ("team",))


@pytest.mark.parametrize(
    ("status", "message", "expected"),
    [
        (429, "Rate limit reached", FailureKind.RATE_LIMITED),
        (500, "internal error", FailureKind.TRANSIENT),
        (503, "overloaded", FailureKind.TRANSIENT),
        (401, "invalid api key", FailureKind.AUTH),
        (403, "forbidden", FailureKind.AUTH),
        (402, "payment required", FailureKind.BILLING),
        (429, "You exceeded your current quota", FailureKind.BILLING),
        (400, "This model's maximum context length is 8192 tokens", FailureKind.CONTEXT_OVERFLOW),
        (400, "prompt is too long: 210000 tokens > 200000 maximum", FailureKind.CONTEXT_OVERFLOW),
        (400, "tools[0].function.name: invalid", FailureKind.BAD_REQUEST),
        (422, "unprocessable", FailureKind.BAD_REQUEST),
    ],
)
def test_a_status_and_message_are_classified_before_anything_is_decided(
    status: int, message: str, expected: FailureKind
) -> None:
    """Each HTTP status and provider wording falls in the class failover decides on."""
    assert expected == classify(status, message)


def test_a_timeout_or_a_lost_connection_is_transient() -> None:
    """Failures without an HTTP answer are transient, whatever was said."""
    assert [FailureKind.TRANSIENT] * 3 == [
        classify(None),
        classify(None, timed_out=True),
        classify(200, "stream reset", connection_lost=True),
    ]


def test_a_rate_limited_profile_rotates_to_the_next_profile_of_the_same_model() -> None:
    """A rate limit on one credential asks the same model with the next credential."""
    failover = Failover((MAIN, SPARE))
    first = failover.first(now=0.0)

    decision = failover.after(Failure(first, FailureKind.RATE_LIMITED, status=429), now=1.0)

    assert Candidate("openai", "gpt-main", "work") == first
    assert (FailoverAction.ROTATE_PROFILE, Candidate("openai", "gpt-main", "personal")) == (
        decision.action,
        decision.candidate,
    )


def test_when_every_profile_failed_the_next_model_is_asked() -> None:
    """Auth failures on every profile of a model fall back to the next model of the chain."""
    failover = Failover((MAIN, SPARE))
    first = failover.first(now=0.0)
    rotated = failover.after(Failure(first, FailureKind.AUTH, status=401), now=0.0)
    assert rotated.candidate is not None

    decision = failover.after(Failure(rotated.candidate, FailureKind.AUTH, status=401), now=0.0)

    assert (FailoverAction.FALLBACK_MODEL, Candidate("anthropic", "claude-spare", "team")) == (
        decision.action,
        decision.candidate,
    )


def test_a_bad_request_is_surfaced_at_once_with_every_attempt() -> None:
    """A request that is itself wrong is never retried; the error lists what was tried."""
    failover = Failover((MAIN, SPARE))
    first = failover.first(now=0.0)

    decision = failover.after(
        Failure(first, FailureKind.BAD_REQUEST, status=400, message="bad"), 0.0
    )

    assert (FailoverAction.SURFACE_ERROR, None) == (decision.action, decision.candidate)
    assert "- openai/gpt-main (work): bad_request (HTTP 400): bad" in surfaced_error_text(
        decision.attempts
    )


def test_a_context_overflow_skips_the_other_profiles_of_the_same_model() -> None:
    """Another credential cannot make a prompt fit: the next model is asked."""
    failover = Failover((MAIN, SPARE))

    decision = failover.after(Failure(failover.first(0.0), FailureKind.CONTEXT_OVERFLOW), 0.0)

    assert FailoverAction.FALLBACK_MODEL == decision.action


def test_an_explicit_model_choice_rotates_profiles_but_never_falls_back() -> None:
    """With fall-back off, the last profile's failure surfaces instead of asking another model."""
    failover = Failover((MAIN, SPARE), FailoverPolicy(fall_back=False))
    first = failover.first(0.0)
    rotated = failover.after(Failure(first, FailureKind.AUTH), 0.0)
    assert rotated.candidate is not None

    decision = failover.after(Failure(rotated.candidate, FailureKind.AUTH), 0.0)

    assert FailoverAction.SURFACE_ERROR == decision.action
    assert 2 == len(decision.attempts)


def test_retry_after_is_honoured_up_to_the_cap_and_only_once() -> None:
    """The last profile's retry-after is waited once; a second rate limit moves on."""
    only = ModelChoice("openai", "gpt-main", ("work",))
    failover = Failover((only, SPARE), FailoverPolicy(retry_after_cap=30.0))
    first = failover.first(0.0)

    waited = failover.after(Failure(first, FailureKind.RATE_LIMITED, retry_after=12.0), 0.0)
    again = failover.after(Failure(first, FailureKind.RATE_LIMITED, retry_after=12.0), 12.0)

    assert (FailoverAction.RETRY_AFTER_WAIT, first, 12.0) == (
        waited.action,
        waited.candidate,
        waited.wait,
    )
    assert FailoverAction.FALLBACK_MODEL == again.action


def test_a_retry_after_beyond_the_cap_is_not_waited_for() -> None:
    """A provider asking for ten minutes is not waited on: the chain moves on."""
    only = ModelChoice("openai", "gpt-main", ("work",))
    failover = Failover((only,), FailoverPolicy(retry_after_cap=60.0))

    decision = failover.after(
        Failure(failover.first(0.0), FailureKind.RATE_LIMITED, retry_after=600.0), 0.0
    )

    assert FailoverAction.SURFACE_ERROR == decision.action


def test_a_transient_failure_asks_the_same_candidate_once_more_after_a_short_wait() -> None:
    """A 503 is retried once on the same candidate, then the next model is asked."""
    failover = Failover((MAIN, SPARE), FailoverPolicy(transient_wait=0.5))
    first = failover.first(0.0)

    retried = failover.after(Failure(first, FailureKind.TRANSIENT, status=503), 0.0)
    moved = failover.after(Failure(first, FailureKind.TRANSIENT, status=503), 0.5)

    assert (FailoverAction.RETRY_AFTER_WAIT, first, 0.5) == (
        retried.action,
        retried.candidate,
        retried.wait,
    )
    assert FailoverAction.FALLBACK_MODEL == moved.action


def test_a_profile_that_failed_goes_to_the_back_of_the_next_request() -> None:
    """Cooldowns outlive one request: the next request starts with the profile that did not fail."""
    cooling: dict[tuple[str, str], float] = {}
    earlier = Failover((MAIN,), FailoverPolicy(cooldown=60.0), cooling)
    earlier.after(Failure(earlier.first(0.0), FailureKind.AUTH), 0.0)

    during = Failover((MAIN,), FailoverPolicy(cooldown=60.0), cooling).first(30.0)
    later = Failover((MAIN,), FailoverPolicy(cooldown=60.0), cooling).first(61.0)

    assert ("personal", "work") == (during.profile, later.profile)


def test_a_chain_without_a_model_or_a_profile_is_refused() -> None:
    """Failover needs something to ask; an empty chain is a typed error at once."""
    with pytest.raises(ValueError, match="at least one model"):
        Failover(())
    with pytest.raises(ValueError, match="credential profile"):
        Failover((ModelChoice("openai", "gpt-main", ()),))


def test_a_decision_carries_every_attempt_in_order() -> None:
    """What a surfaced error lists is every failure, oldest first."""
    failover = Failover((MAIN, SPARE))
    decisions: list[Decision] = []
    candidate: Candidate | None = failover.first(0.0)
    while candidate is not None:
        decision = failover.after(Failure(candidate, FailureKind.AUTH), 0.0)
        decisions.append(decision)
        candidate = decision.candidate

    assert [a.candidate.profile for a in decisions[-1].attempts] == ["work", "personal", "team"]
    assert FailoverAction.SURFACE_ERROR == decisions[-1].action
