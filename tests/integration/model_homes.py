"""Homes whose models point at loopback servers, for the model resolution and doctor tests."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from tests.cli_runner import invoke

KEY = "sk-test-0123456789abcdef"
"""The key of the `work` profile every home defines."""


def model_table(
    name: str,
    provider: str,
    model: str,
    base_url: str | None = None,
    profiles: tuple[str, ...] = ("work",),
) -> str:
    """One `[models.NAME]` table of config.toml."""
    lines = [f"[models.{name}]", f'provider = "{provider}"', f'model = "{model}"']
    if base_url is not None:
        lines.append(f'base_url = "{base_url}"')
    if provider == "scripted":
        lines.append('script = "demo.jsonl"')
    else:
        lines.append(f"profiles = {json.dumps(list(profiles))}")
    return "\n".join(lines) + "\n"


def write_home(home: Path, *tables: str) -> None:
    """A home with these model tables and an owner-only secrets.toml defining `work`."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("\n".join(tables))
    secrets = home / "secrets.toml"
    secrets.write_text(f'[profiles.work]\napi_key = "{KEY}"\n')
    secrets.chmod(0o600)


@contextmanager
def refusing_url() -> Iterator[str]:
    """The URL of a loopback port nothing listens on: connecting is refused."""
    with closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    yield f"http://127.0.0.1:{port}/v1"


@contextmanager
def silent_url() -> Iterator[str]:
    """The URL of a loopback port that accepts connections and never answers."""
    with closing(socket.socket()) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"


def listed_models(*options: str) -> dict[str, dict[str, Any]]:
    """`models list --json` (exit 0 asserted) as rows by model name."""
    code, out, err = invoke("models", "list", "--json", *options)
    assert (0, "") == (code, err)
    return {row["name"]: row for row in json.loads(out)}


def doctor_checks(*options: str) -> tuple[int, dict[str, dict[str, Any]]]:
    """`doctor --json`: its exit code and its checks by name."""
    code, out, _ = invoke("doctor", "--json", *options)
    return code, {check["name"]: check for check in json.loads(out)["checks"]}
