"""The asyncio gateway client against a real daemon: concurrency, refusals, a dropped link."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.control.gateway_async import AsyncGatewayClient
from adapters.control.gateway_wire import GatewayError, GatewayGoneError
from tests.chat_rig import answer_step, chat_home, home_gateway
from tests.daemon_harness import RunningDaemon, free_port, start_daemon

pytestmark = pytest.mark.anyio


@pytest.fixture
def slow_daemon(tmp_path: Path, work: Path) -> Iterator[RunningDaemon]:
    """A daemon whose agent takes 30 s over its first answer."""
    daemon = start_daemon(chat_home(tmp_path, work, [{"delay": 30}, answer_step("late")]))
    yield daemon
    daemon.stop(signal.SIGKILL if daemon.process.poll() is None else signal.SIGTERM)


async def test_a_request_in_flight_holds_up_no_other(slow_daemon: RunningDaemon) -> None:
    """A send that waits for the busy run is answered after `status`, sent later, is."""
    async with await home_gateway(slow_daemon).open() as client:
        session = (await client.call("sessions.create"))["session_id"]
        await client.call("chat.send", {"session": session, "text": "slow", "client_run_id": "a"})
        queued = asyncio.ensure_future(
            client.call(
                "chat.send", {"session": session, "text": "next", "client_run_id": "b"}, wait=None
            )
        )
        status = await client.call("status")
        waiting = not queued.done()
        await client.call("chat.abort", {"session": session})
        started = await queued

    assert "ok" == status["status"]
    assert waiting
    assert "started" == started["status"]


async def test_refusals_are_typed_errors_and_the_connection_stays(
    slow_daemon: RunningDaemon,
) -> None:
    """An unknown method and malformed params raise GatewayError with the daemon's code."""
    async with await home_gateway(slow_daemon).open() as client:
        with pytest.raises(GatewayError) as unknown:
            await client.call("no.such.method")
        with pytest.raises(GatewayError) as bad:
            await client.call("chat.send", {"session": "nope", "text": "hi"})
        still = await client.call("status")

    assert ("unknown_method", "bad_control_request") == (unknown.value.code, bad.value.code)
    assert "ok" == still["status"]


async def test_a_killed_daemon_fails_the_request_in_flight_and_ends_the_events(
    slow_daemon: RunningDaemon,
) -> None:
    """Kill -9: the waiting call and the event stream both raise GatewayGoneError."""
    client = await home_gateway(slow_daemon).open()
    session = (await client.call("sessions.create"))["session_id"]
    await client.call("chat.send", {"session": session, "text": "slow", "client_run_id": "a"})
    waiting = asyncio.ensure_future(
        client.call("chat.send", {"session": session, "text": "b", "client_run_id": "b"}, wait=None)
    )
    await client.call("status")  # the send above is in flight by now

    slow_daemon.stop(signal.SIGKILL)

    with pytest.raises(GatewayGoneError):
        await waiting
    with pytest.raises(GatewayGoneError):
        async for _event in client.events():
            pass
    assert not client.connected
    with pytest.raises(GatewayGoneError):
        await client.call("status")
    await client.aclose()


async def test_a_wrong_key_is_refused_and_a_free_port_is_no_daemon(
    slow_daemon: RunningDaemon,
) -> None:
    """A proof signed with another key is `invalid_proof`; nothing listening is refused."""
    with pytest.raises(GatewayError) as refused:
        await AsyncGatewayClient.open(slow_daemon.port, key=b"k" * 32)
    with pytest.raises(ConnectionRefusedError):
        await AsyncGatewayClient.open(free_port(), key=b"k" * 32)

    assert "invalid_proof" == refused.value.code
