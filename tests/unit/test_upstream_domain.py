"""The upstream domain: back-off, catalogs and their digests, the server's stream."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.upstream.aggregate import UpstreamServer, server_stream
from domain.upstream.catalog import (
    UpstreamTool,
    compare,
    digests,
    qualified,
    selected,
    split_qualified,
)
from domain.upstream.events import UpstreamCatalogChanged, UpstreamStateChanged
from domain.upstream.states import (
    FIRST_BACKOFF_SECONDS,
    MAX_BACKOFF_SECONDS,
    FailureClass,
    ServerState,
    backoff_seconds,
)

AT = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


def test_backoff_doubles_from_thirty_seconds_to_ten_minutes() -> None:
    """Without jitter the waits are 30, 60, 120, ... and never more than 600 s."""
    waits = [backoff_seconds(n, 0.0) for n in range(1, 8)]

    assert [30.0, 60.0, 120.0, 240.0, 480.0, 600.0, 600.0] == waits


@given(failures=st.integers(min_value=0, max_value=10_000), spread=st.floats(-5, 5))
def test_jitter_keeps_every_wait_within_a_fifth(failures: int, spread: float) -> None:
    """Any spread moves a wait by at most a fifth of its base, and never below 24 s."""
    wait = backoff_seconds(failures, spread)

    assert FIRST_BACKOFF_SECONDS * 0.8 <= wait <= MAX_BACKOFF_SECONDS * 1.2


def test_a_tool_filter_allows_by_glob_and_deny_wins() -> None:
    """`allow` keeps matching names (all when unset); `deny` removes them."""
    assert selected("search_issues", ["search_*"], [])
    assert not selected("delete_issue", ["search_*"], [])
    assert not selected("search_secret", None, ["*_secret"])
    assert selected("anything", None, [])


def test_qualified_names_split_back() -> None:
    """`SERVER/TOOL` splits at the first slash; a name without one is not qualified."""
    assert ("git", "git_status") == split_qualified(qualified("git", "git_status"))
    assert split_qualified("read_file") is None


def test_a_changed_schema_changes_the_digest_and_is_reported() -> None:
    """Adding, removing and changing a tool are each named in the comparison."""
    before = digests([UpstreamTool(name="a"), UpstreamTool(name="b")])
    after = digests(
        [UpstreamTool(name="a", input_schema={"type": "object"}), UpstreamTool(name="c")]
    )

    change = compare(before, after)

    assert (("c",), ("b",), ("a",)) == (change.added, change.removed, change.changed)


def test_the_stream_records_a_catalog_only_when_it_changes() -> None:
    """The first listing and a changed one are events; the same listing again is not."""
    server = UpstreamServer.create("time")
    tools = (UpstreamTool(name="now", read_only=True, destructive=False, idempotent=True),)

    server.record_catalog(tools, AT)
    server.record_catalog(tools, AT)
    server.record_catalog((*tools, UpstreamTool(name="zone")), AT)
    events = [e for e in server.collect_events() if isinstance(e, UpstreamCatalogChanged)]

    assert [("now",), ("zone",)] == [e.added for e in events]
    assert server_stream("time") == server.id
    zone = server.tool("zone")
    assert zone is not None
    assert "zone" == zone.name


def test_a_failure_is_kept_as_the_last_error_after_a_recovery() -> None:
    """A backoff's reason stays the last error once the server is connected again."""
    server = UpstreamServer.create("git")
    server.change_state(ServerState.CONNECTING, "starting", AT)
    server.change_state(
        ServerState.BACKOFF,
        "Connection closed",
        AT,
        failure=FailureClass.TRANSPORT,
        next_retry_at=AT,
        failures=1,
    )
    server.change_state(ServerState.CONNECTED, "listed 3 tools", AT)
    unchanged = server.change_state(ServerState.CONNECTED, "listed 3 tools", AT)
    states = [e.state for e in server.collect_events() if isinstance(e, UpstreamStateChanged)]

    assert [ServerState.CONNECTING, ServerState.BACKOFF, ServerState.CONNECTED] == states
    assert not unchanged
    assert ("Connection closed", AT) == (server.last_error, server.connected_at)


@pytest.mark.parametrize("name", ["", "x" * 201])
def test_an_upstream_tool_needs_a_usable_name(name: str) -> None:
    """A listed tool without a name, or with an absurdly long one, is refused."""
    with pytest.raises(ValueError, match="name"):
        UpstreamTool(name=name)
