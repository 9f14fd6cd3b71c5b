"""The registry head and token checks from the kept registry, on a real journal file."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from adapters.journal.journal import SqliteJournal
from adapters.security.pairing import TokenAuthenticator, pair_device
from adapters.security.registry_head import RegistryHead
from domain.devices.aggregate import REGISTRY_ID
from domain.devices.errors import DeviceRevokedError, InvalidDeviceTokenError

PAIRED_AT = datetime(2026, 1, 1, tzinfo=UTC)


class WallClock:
    """A settable wall clock."""

    def __init__(self, now: datetime = PAIRED_AT) -> None:
        self.now = now

    def __call__(self) -> datetime:
        """The current instant."""
        return self.now


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """Where the journal file lives."""
    return tmp_path / "ledgerclaw.db"


@pytest.fixture
def journals(path: Path) -> Iterator[tuple[SqliteJournal, SqliteJournal]]:
    """Two journal objects on one SQLite file, as the daemon and the CLI hold them."""
    daemon, cli = SqliteJournal(path), SqliteJournal(path)
    yield daemon, cli
    daemon.close()
    cli.close()


@pytest.fixture
def head(path: Path, journals: tuple[SqliteJournal, SqliteJournal]) -> Iterator[RegistryHead]:
    """The registry head on the same file."""
    assert journals
    kept = RegistryHead(path)
    yield kept
    kept.close()


def test_the_head_follows_the_registry_stream_written_elsewhere(
    journals: tuple[SqliteJournal, SqliteJournal], head: RegistryHead
) -> None:
    """The head is 0 before any pairing, then the stream's version after each change."""
    daemon, cli = journals
    assert 0 == head.version()

    device_id, _ = pair_device(cli, "Pixel", PAIRED_AT)
    assert daemon.stream_version(REGISTRY_ID) == head.version()

    cli.update_devices(lambda registry: registry.revoke(device_id, PAIRED_AT))
    assert daemon.stream_version(REGISTRY_ID) == head.version()


def test_the_head_answers_none_at_once_while_another_connection_holds_the_file(
    path: Path,
) -> None:
    """An exclusive lock elsewhere makes the head say None, not wait; it answers once released."""
    SqliteJournal(path).close()
    head = RegistryHead(path)
    with closing(sqlite3.connect(path, isolation_level=None)) as holder:
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        assert head.version() is None
        holder.execute("ROLLBACK")
    assert 0 == head.version()
    head.close()


def test_a_missing_file_gives_no_head(tmp_path: Path) -> None:
    """A head on a file that does not exist says None instead of raising."""
    missing = RegistryHead(tmp_path / "nothing.db")
    assert missing.version() is None
    assert not (tmp_path / "nothing.db").exists()


def test_the_kept_registry_decides_only_while_it_is_current(
    journals: tuple[SqliteJournal, SqliteJournal], head: RegistryHead
) -> None:
    """A kept check answers from memory until a revocation elsewhere; then the slow one refuses."""
    daemon, cli = journals
    device_id, token = pair_device(daemon, "Pixel", PAIRED_AT)
    authenticator = TokenAuthenticator(daemon, clock=WallClock(), head=head.version)
    assert authenticator.authenticate_kept(token) is None  # nothing kept yet
    assert device_id == authenticator.authenticate(token)  # reads the registry, records a sighting
    assert device_id == authenticator.authenticate(token)  # keeps the registry with that sighting

    assert device_id == authenticator.authenticate_kept(token)

    cli.update_devices(lambda registry: registry.revoke(device_id, PAIRED_AT))
    assert authenticator.authenticate_kept(token) is None
    with pytest.raises(DeviceRevokedError):
        authenticator.authenticate(token)
    with pytest.raises(DeviceRevokedError):
        authenticator.authenticate_kept(token)
    assert 2 == authenticator.refused


def test_a_device_paired_elsewhere_sends_the_kept_check_to_the_journal(
    journals: tuple[SqliteJournal, SqliteJournal], head: RegistryHead
) -> None:
    """After a pairing in another process the kept copy is stale, and the slow check accepts."""
    daemon, cli = journals
    first, token = pair_device(daemon, "Pixel", PAIRED_AT)
    authenticator = TokenAuthenticator(daemon, clock=WallClock(), head=head.version)
    authenticator.authenticate(token)
    assert first == authenticator.authenticate(token)

    second, new_token = pair_device(cli, "Laptop", PAIRED_AT)

    assert authenticator.authenticate_kept(new_token) is None
    assert second == authenticator.authenticate(new_token)


def test_a_wrong_token_is_refused_from_the_kept_registry(
    journals: tuple[SqliteJournal, SqliteJournal], head: RegistryHead
) -> None:
    """An unknown secret is refused by the kept check itself, and counted."""
    daemon, _ = journals
    device_id, token = pair_device(daemon, "Pixel", PAIRED_AT)
    authenticator = TokenAuthenticator(daemon, clock=WallClock(), head=head.version)
    authenticator.authenticate(token)
    authenticator.authenticate(token)

    with pytest.raises(InvalidDeviceTokenError):
        authenticator.authenticate_kept(f"{device_id}.{'x' * 43}")
    assert 1 == authenticator.refused


def test_a_due_sighting_leaves_the_check_to_the_journal(
    journals: tuple[SqliteJournal, SqliteJournal], head: RegistryHead
) -> None:
    """A minute after the last sighting the kept check steps aside, so the sighting is written."""
    daemon, _ = journals
    device_id, token = pair_device(daemon, "Pixel", PAIRED_AT)
    clock = WallClock()
    authenticator = TokenAuthenticator(daemon, clock=clock, head=head.version)
    authenticator.authenticate(token)
    authenticator.authenticate(token)
    assert device_id == authenticator.authenticate_kept(token)

    clock.now = PAIRED_AT + timedelta(seconds=60)

    assert authenticator.authenticate_kept(token) is None
    version = head.version()
    assert device_id == authenticator.authenticate(token)
    assert version is not None
    assert version + 1 == head.version()


def test_the_current_version_is_none_once_the_registry_moved(
    journals: tuple[SqliteJournal, SqliteJournal], head: RegistryHead
) -> None:
    """The kept copy's version is offered only while the head shows it current."""
    daemon, cli = journals
    device_id, token = pair_device(daemon, "Pixel", PAIRED_AT)
    authenticator = TokenAuthenticator(daemon, clock=WallClock(), head=head.version)
    assert authenticator.current_version() is None
    authenticator.authenticate(token)
    revoked, version = authenticator.revoked()
    assert (frozenset(), head.version()) == (revoked, version)
    assert version == authenticator.current_version()

    cli.update_devices(lambda registry: registry.revoke(device_id, PAIRED_AT))

    assert authenticator.current_version() is None
    assert frozenset({device_id}) == authenticator.revoked()[0]
