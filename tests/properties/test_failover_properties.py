"""Failover always ends and only ever names candidates of its chain; property tests."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from domain.agent.failover import (
    Candidate,
    Failover,
    FailoverAction,
    FailoverPolicy,
    Failure,
    FailureKind,
    ModelChoice,
)

chains = st.lists(
    st.builds(
        ModelChoice,
        st.sampled_from(["openai", "anthropic", "local"]),
        st.text("abcdefgh", min_size=1, max_size=4),
        st.lists(st.text("wxyz", min_size=1, max_size=3), min_size=1, max_size=3, unique=True).map(
            tuple
        ),
    ),
    min_size=1,
    max_size=4,
    unique_by=lambda choice: choice.model,
).map(tuple)
failures = st.lists(
    st.tuples(
        st.sampled_from(list(FailureKind)),
        st.none() | st.floats(min_value=0, max_value=120, allow_nan=False),
    ),
    min_size=1,
    max_size=40,
)


@given(chains, failures, st.booleans())
def test_every_candidate_failing_ends_in_a_surfaced_error_within_a_bound(
    chain: tuple[ModelChoice, ...],
    script: list[tuple[FailureKind, float | None]],
    fall_back: bool,
) -> None:
    """However candidates fail, failover surfaces within two tries per candidate."""
    allowed = {Candidate(c.provider, c.model, p) for c in chain for p in c.profiles}
    failover = Failover(chain, FailoverPolicy(fall_back=fall_back))
    candidate: Candidate | None = failover.first(0.0)
    now, asked = 0.0, 0
    while candidate is not None:
        assert candidate in allowed
        kind, retry_after = script[asked % len(script)]
        decision = failover.after(Failure(candidate, kind, retry_after=retry_after), now)
        asked += 1
        assert asked == len(decision.attempts)
        assert asked <= 2 * len(allowed)
        now += decision.wait
        candidate = decision.candidate
        if candidate is None:
            assert FailoverAction.SURFACE_ERROR == decision.action
