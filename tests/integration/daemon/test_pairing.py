"""Pairing codes, device pairing and device-token checks on a real journal; integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from adapters.journal.journal import SqliteJournal
from adapters.security.pairing import (
    ALPHABET,
    MAX_FAILED_ATTEMPTS,
    DeviceNameInvalidError,
    PairingCodeExpiredError,
    PairingCodeInvalidError,
    PairingCodes,
    TokenAuthenticator,
    normalise_code,
    pair_device,
)
from domain.devices.aggregate import REGISTRY_ID
from domain.devices.errors import DeviceRevokedError, InvalidDeviceTokenError
from domain.devices.events import DeviceSeen

PAIRED_AT = datetime(2026, 1, 1, tzinfo=UTC)


class Clock:
    """A settable clock of any kind of instant."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        """The current instant."""
        return self.now


class WallClock:
    """A settable wall clock."""

    def __init__(self, now: datetime = PAIRED_AT) -> None:
        self.now = now

    def __call__(self) -> datetime:
        """The current instant."""
        return self.now


@pytest.fixture
def journals(tmp_path: Path) -> Iterator[tuple[SqliteJournal, SqliteJournal]]:
    """Two journal objects on one SQLite file, as the daemon and the CLI hold them."""
    daemon, cli = SqliteJournal(tmp_path / "j.db"), SqliteJournal(tmp_path / "j.db")
    yield daemon, cli
    daemon.close()
    cli.close()


def test_an_issued_code_is_two_groups_of_unambiguous_characters() -> None:
    """A code reads XXXX-XXXX in Crockford base32 and expires five minutes after issue."""
    codes = PairingCodes(clock=Clock(100.0))

    issued = codes.issue("phone")

    first, second = issued.code.split("-")
    assert 4 == len(first) == len(second)
    assert set(first + second) <= set(ALPHABET)
    assert not set("ILOU") & set(ALPHABET)
    assert 400.0 == issued.expires_at
    assert "phone" == issued.name


@pytest.mark.parametrize("name", ["", "n" * 101])
def test_a_code_for_a_badly_named_device_is_not_issued(name: str) -> None:
    """The operator's device name is checked when the code is issued, not when it is used."""
    with pytest.raises(DeviceNameInvalidError):
        PairingCodes().issue(name)


def test_a_code_is_accepted_once_in_any_case_and_spacing() -> None:
    """Lower case, spaces and a missing hyphen still match; a second use is refused."""
    codes = PairingCodes(clock=Clock(0.0))
    issued = codes.issue(None)
    typed = " " + issued.code.replace("-", " ").lower() + "\n"

    assert issued == codes.consume(typed)
    with pytest.raises(PairingCodeInvalidError):
        codes.consume(issued.code)


def test_look_alike_letters_are_read_as_digits() -> None:
    """O reads as zero and I or L as one, as Crockford's base32 decodes them."""
    assert "01100000" == normalise_code("oIL0-0000")


def test_an_expired_code_is_refused_and_names_the_command_for_a_new_one() -> None:
    """At five minutes the code expires; the error says to run `ledgerclaw daemon pair`."""
    clock = Clock(0.0)
    codes = PairingCodes(clock=clock)
    issued = codes.issue(None)
    clock.now = 300.0

    for _ in range(2):
        with pytest.raises(PairingCodeExpiredError, match="ledgerclaw daemon pair") as caught:
            codes.consume(issued.code)
    assert 2 == caught.value.exit_code


def test_a_new_code_replaces_the_previous_one() -> None:
    """Only the most recently issued code is accepted."""
    codes = PairingCodes(clock=Clock(0.0))
    old = codes.issue(None)
    new = codes.issue(None)

    with pytest.raises(PairingCodeInvalidError):
        codes.consume(old.code if old.code != new.code else "0000-0000")
    assert new == codes.consume(new.code)


def test_ten_wrong_codes_discard_the_current_code() -> None:
    """After ten wrong guesses even the right code is refused, so guessing cannot win."""
    codes = PairingCodes(clock=Clock(0.0))
    issued = codes.issue(None)
    wrong = "0000-0000" if issued.code != "0000-0000" else "1111-1111"

    for _ in range(MAX_FAILED_ATTEMPTS - 1):
        with pytest.raises(PairingCodeInvalidError):
            codes.consume(wrong)
    with pytest.raises(PairingCodeInvalidError):
        codes.consume(wrong)
    with pytest.raises(PairingCodeInvalidError):
        codes.consume(issued.code)


def test_nine_wrong_codes_leave_the_right_one_usable() -> None:
    """Fewer than ten wrong guesses do not discard the code."""
    codes = PairingCodes(clock=Clock(0.0))
    issued = codes.issue(None)
    wrong = "0000-0000" if issued.code != "0000-0000" else "1111-1111"

    for _ in range(MAX_FAILED_ATTEMPTS - 1):
        with pytest.raises(PairingCodeInvalidError):
            codes.consume(wrong)

    assert issued == codes.consume(issued.code)


def test_pairing_creates_the_registry_and_returns_a_working_token(
    journals: tuple[SqliteJournal, SqliteJournal],
) -> None:
    """The first pairing creates the registry; the token authenticates its device."""
    daemon, cli = journals
    assert 0 == daemon.stream_version(REGISTRY_ID)

    device_id, token = pair_device(daemon, "Pixel", PAIRED_AT)

    assert token.startswith(f"{device_id}.")
    registry = cli.devices()
    assert "Pixel" == registry.devices[device_id].display_name
    assert token not in registry.devices[device_id].token_hash
    assert device_id == registry.authenticate(token)


def test_pairing_twice_adds_a_second_device(journals: tuple[SqliteJournal, SqliteJournal]) -> None:
    """A second pairing, from another journal object, adds to the same registry."""
    daemon, cli = journals
    first, _ = pair_device(daemon, "Pixel", PAIRED_AT)
    second, _ = pair_device(cli, "Laptop", PAIRED_AT)

    assert {first, second} == set(daemon.devices().devices)


def test_every_token_is_invalid_without_a_registry(
    journals: tuple[SqliteJournal, SqliteJournal],
) -> None:
    """With no device ever paired, a token is refused and nothing is written."""
    daemon, _ = journals
    authenticator = TokenAuthenticator(daemon)

    with pytest.raises(InvalidDeviceTokenError):
        authenticator.authenticate("dev_" + "0" * 32 + "." + "s" * 43)

    assert 1 == authenticator.refused
    assert 0 == daemon.stream_version(REGISTRY_ID)


def test_a_revocation_by_another_process_refuses_the_next_request(
    journals: tuple[SqliteJournal, SqliteJournal],
) -> None:
    """A device revoked through another journal object is refused on its very next check."""
    daemon, cli = journals
    device_id, token = pair_device(daemon, "Pixel", PAIRED_AT)
    TokenAuthenticator(cli, clock=WallClock()).authenticate(token)  # seen: no write follows
    authenticator = TokenAuthenticator(daemon, clock=WallClock())
    assert device_id == authenticator.authenticate(token)

    cli.update_devices(lambda registry: registry.revoke(device_id, PAIRED_AT))

    with pytest.raises(DeviceRevokedError):
        authenticator.authenticate(token)
    assert 1 == authenticator.refused


def test_a_device_paired_elsewhere_is_accepted_at_once(
    journals: tuple[SqliteJournal, SqliteJournal],
) -> None:
    """A registry kept in memory is read again when another process paired a device."""
    daemon, cli = journals
    authenticator = TokenAuthenticator(daemon, clock=WallClock())
    pair_device(daemon, "Pixel", PAIRED_AT)
    authenticator.authenticate(pair_device(daemon, "Tablet", PAIRED_AT)[1])

    device_id, token = pair_device(cli, "Laptop", PAIRED_AT)

    assert device_id == authenticator.authenticate(token)


def test_a_wrong_secret_is_refused_and_counted(
    journals: tuple[SqliteJournal, SqliteJournal],
) -> None:
    """A token with the right device id and a wrong secret is refused."""
    daemon, _ = journals
    device_id, _ = pair_device(daemon, "Pixel", PAIRED_AT)
    authenticator = TokenAuthenticator(daemon)

    for token in (f"{device_id}.{'x' * 43}", "garbage", ""):
        with pytest.raises(InvalidDeviceTokenError):
            authenticator.authenticate(token)

    assert 3 == authenticator.refused


def test_being_seen_is_recorded_at_most_once_a_minute(
    journals: tuple[SqliteJournal, SqliteJournal],
) -> None:
    """Checks within 60 seconds record one DeviceSeen; a check a minute later records another."""
    daemon, cli = journals
    device_id, token = pair_device(daemon, "Pixel", PAIRED_AT)
    clock = WallClock()
    authenticator = TokenAuthenticator(daemon, clock=clock)

    for seconds in (0, 10, 59):
        clock.now = PAIRED_AT + timedelta(seconds=seconds)
        authenticator.authenticate(token)
    clock.now = PAIRED_AT + timedelta(seconds=60)
    authenticator.authenticate(token)

    seen = [e for e in cli.app.events.get(REGISTRY_ID) if isinstance(e, DeviceSeen)]
    assert [PAIRED_AT, PAIRED_AT + timedelta(seconds=60)] == [e.seen_at for e in seen]
    assert clock.now == cli.devices().devices[device_id].last_seen_at
