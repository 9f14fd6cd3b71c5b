"""A device gets the gateway scopes it was paired with, against a real daemon."""

from __future__ import annotations

from typing import Any

import orjson
from websockets.sync.client import connect

from tests.daemon_harness import RunningDaemon, cli_json, run_cli


def connected(daemon: RunningDaemon, token: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The hello a device token gets, and its answers to approvals.list and pair.code."""
    with connect(f"ws://127.0.0.1:{daemon.port}/control", proxy=None, open_timeout=5) as socket:
        orjson.loads(socket.recv(timeout=5))  # connect.challenge
        answers = []
        for number, (method, params) in enumerate(
            [("connect", {"token": token}), ("approvals.list", {}), ("pair.code", {})]
        ):
            frame = {"type": "req", "id": str(number), "method": method, "params": params}
            socket.send(orjson.dumps(frame).decode())
            while (answer := orjson.loads(socket.recv(timeout=5)))["type"] != "res":
                pass
            answers.append(answer)
    return answers[0]["payload"], answers[1:]


def paired(daemon: RunningDaemon, *scopes: str) -> tuple[dict[str, Any], str]:
    """A pairing code asked with `--scopes`, and the token of the device it paired."""
    asked = ["--scopes", ",".join(scopes)] if scopes else []
    code = cli_json(daemon.home, "daemon", "pair", *asked)
    token = cli_json(daemon.home, "devices", "pair", code["code"])["token"]
    return code, token


def test_a_device_paired_with_approvals_may_list_them_but_never_issue_codes(
    daemon: RunningDaemon,
) -> None:
    """`--scopes read,approvals` grants both; pair.code stays for the local command line."""
    code, token = paired(daemon, "read", "approvals")

    hello, (listed, issued) = connected(daemon, token)

    assert ["operator.approvals", "operator.read"] == code["scopes"]
    assert ["operator.read", "operator.approvals"] == hello["scopes"]
    assert [
        "approvals.decide",
        "approvals.list",
        "approvals.resolve",
        "mcp.status",
        "status",
    ] == hello["methods"]
    assert {"approvals": []} == listed["payload"]
    assert "forbidden" == issued["error"]["code"]


def test_a_device_paired_without_scopes_may_only_read(daemon: RunningDaemon) -> None:
    """The default is `operator.read`: status only; approvals are forbidden to it."""
    _code, token = paired(daemon)

    hello, (listed, _issued) = connected(daemon, token)

    assert (["operator.read"], ["mcp.status", "status"]) == (hello["scopes"], hello["methods"])
    assert "forbidden" == listed["error"]["code"]


def test_an_unknown_scope_is_refused_when_the_code_is_asked(daemon: RunningDaemon) -> None:
    """`--scopes everything` names the scopes there are; no code is issued."""
    done = run_cli(daemon.home, "daemon", "pair", "--scopes", "everything")

    assert 2 == done.returncode
    assert "'operator.read', 'operator.write' or 'operator.approvals'" in done.stderr
    assert "Traceback" not in done.stderr
