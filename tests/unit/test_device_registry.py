"""Story tests for the DeviceRegistry aggregate and its device tokens; unit tests of the domain."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from domain.base import DomainEvent
from domain.devices import errors, tokens
from domain.devices.aggregate import REGISTRY_ID, DeviceRegistry
from domain.devices.events import (
    DevicePaired,
    DeviceRegistryCreated,
    DeviceRevoked,
    DeviceSeen,
)
from domain.ids import DeviceId
from tests.story import Story

PHONE = DeviceId.from_uuid(UUID(int=1))
LAPTOP = DeviceId.from_uuid(UUID(int=2))
NEVER_PAIRED = DeviceId.from_uuid(UUID(int=9))
SALT = bytes(range(16))
OTHER_SALT = bytes(range(16, 32))
SECRET = "s3cret-" + "k" * 32
OTHER_SECRET = "other-" + "q" * 32
PAIRED_AT = datetime(2026, 1, 1, tzinfo=UTC)
LATER = PAIRED_AT + timedelta(hours=1)

Command = Callable[[DeviceRegistry], object]


_STORY = Story(DeviceRegistry, DeviceRegistry.create)
drain = _STORY.drain
history = _STORY.history
replay = _STORY.replay
when = _STORY.when
refused = _STORY.refused


def paired(device_id: DeviceId = PHONE, secret: str = SECRET, salt: bytes = SALT) -> Command:
    """Pair `device_id` with `secret`."""
    return lambda r: r.pair(device_id, "Pixel", salt, secret, PAIRED_AT)


def revoked(device_id: DeviceId = PHONE) -> Command:
    """Revoke `device_id`."""
    return lambda r: r.revoke(device_id, LATER)


def token(device_id: DeviceId = PHONE, secret: str = SECRET) -> str:
    """The bearer token of `device_id` with `secret`."""
    return f"{device_id}.{secret}"


def test_create_records_the_registry_at_its_fixed_id() -> None:
    """Creating the registry records DeviceRegistryCreated at the home's one registry id."""
    [created] = history()
    assert (DeviceRegistryCreated, REGISTRY_ID) == (type(created), created.originator_id)
    assert {} == replay([created]).state().devices


def test_pair_returns_a_token_of_device_id_and_secret() -> None:
    """Pairing returns `<device id>.<secret>` and records DevicePaired."""
    registry = replay(history())
    issued = registry.pair(PHONE, "Pixel", SALT, SECRET, PAIRED_AT)
    assert f"{PHONE}.{SECRET}" == issued
    [event] = drain(registry)
    expected = (DevicePaired, PHONE, "Pixel", SALT.hex(), tokens.hash_secret(SALT, SECRET))
    assert expected == (
        type(event),
        event.device_id,
        event.display_name,
        event.salt,
        event.token_hash,
    )


def test_pair_records_only_the_salt_and_hash_of_the_secret() -> None:
    """Neither the secret nor the token appears in any recorded event."""
    events = history(paired(), lambda r: r.mark_seen(PHONE, LATER), revoked())
    dumped = [event.model_dump_json() for event in events]
    assert [] == [text for text in dumped if SECRET in text or token() in text]
    expected = {"device_id", "display_name", "salt", "token_hash", "paired_at", "scopes"}
    assert expected == set(DevicePaired.model_fields) - set(DomainEvent.model_fields)


def test_pair_refuses_a_device_already_paired() -> None:
    """A device id is paired once, even with a new secret."""
    given = history(paired())
    refused(given, paired(secret=OTHER_SECRET), errors.DeviceAlreadyPairedError)


@pytest.mark.parametrize(
    ("secret", "salt"),
    [("k" * (tokens.SECRET_MIN_LENGTH - 1), SALT), (SECRET, bytes(tokens.SALT_MIN_BYTES - 1))],
    ids=["short-secret", "short-salt"],
)
def test_pair_refuses_a_weak_secret_or_salt(secret: str, salt: bytes) -> None:
    """A secret or salt shorter than the minimum is refused."""
    refused(history(), paired(secret=secret, salt=salt), errors.WeakSecretError)


def test_authenticate_names_the_device_of_a_valid_token() -> None:
    """A token with the right secret authenticates its device."""
    registry = replay(history(paired(), paired(LAPTOP, OTHER_SECRET, OTHER_SALT)))
    assert (PHONE, LAPTOP) == (
        registry.authenticate(token()),
        registry.authenticate(token(LAPTOP, OTHER_SECRET)),
    )


@pytest.mark.parametrize(
    "presented",
    [
        token(secret=OTHER_SECRET),
        token(LAPTOP, SECRET),
        token(NEVER_PAIRED),
        f"{PHONE}{SECRET}",
        f"{PHONE}.short",
        f"{PHONE.upper()}.{SECRET}",
        f"dev_123.{SECRET}",
        "",
    ],
    ids=[
        "wrong-secret",
        "another-devices-secret",
        "unknown-device",
        "no-dot",
        "short-secret",
        "uppercase-id",
        "malformed-id",
        "empty",
    ],
)
def test_authenticate_refuses_a_token_it_does_not_recognise(presented: str) -> None:
    """A wrong secret, a malformed token or an unknown device is one refusal."""
    registry = replay(history(paired(), paired(LAPTOP, OTHER_SECRET, OTHER_SALT)))
    with pytest.raises(errors.InvalidDeviceTokenError):
        registry.authenticate(presented)


def test_authenticate_refuses_a_revoked_device_at_once() -> None:
    """A token stops working in the same registry that revoked it, with no replay needed."""
    registry = replay(history(paired()))
    assert PHONE == registry.authenticate(token())
    registry.revoke(PHONE, LATER)
    with pytest.raises(errors.DeviceRevokedError):
        registry.authenticate(token())


def test_authenticate_refuses_a_revoked_device_after_replay() -> None:
    """A revocation read back from the journal still refuses the token."""
    registry = replay(history(paired(), revoked()))
    with pytest.raises(errors.DeviceRevokedError):
        registry.authenticate(token())


def test_mark_seen_records_when_an_active_device_authenticated() -> None:
    """Marking a device seen records DeviceSeen and its time."""
    given = history(paired())
    new = when(given, lambda r: r.mark_seen(PHONE, LATER))
    assert [DeviceSeen] == [type(event) for event in new]
    assert LATER == replay([*given, *new]).state().devices[PHONE].last_seen_at


def test_revoke_records_the_revocation() -> None:
    """Revoking records DeviceRevoked and the device is no longer active."""
    given = history(paired())
    new = when(given, revoked())
    assert [DeviceRevoked] == [type(event) for event in new]
    record = replay([*given, *new]).state().devices[PHONE]
    assert (LATER, False) == (record.revoked_at, record.active)


@pytest.mark.parametrize(
    "command", [revoked(), lambda r: r.mark_seen(PHONE, LATER)], ids=["revoke", "mark_seen"]
)
def test_commands_refuse_a_revoked_device(command: Command) -> None:
    """A revoked device cannot be revoked again or marked seen."""
    refused(history(paired(), revoked()), command, errors.DeviceRevokedError)


@pytest.mark.parametrize(
    "command",
    [revoked(NEVER_PAIRED), lambda r: r.mark_seen(NEVER_PAIRED, LATER)],
    ids=["revoke", "mark_seen"],
)
def test_commands_refuse_a_device_never_paired(command: Command) -> None:
    """A device id the registry never saw is unknown."""
    refused(history(paired()), command, errors.UnknownDeviceError)


def test_state_after_replay_equals_the_live_state() -> None:
    """Replaying the recorded events rebuilds exactly the live state."""
    registry = DeviceRegistry.create()
    for command in (paired(), paired(LAPTOP, OTHER_SECRET, OTHER_SALT), revoked(LAPTOP)):
        command(registry)
    registry.mark_seen(PHONE, LATER)
    assert registry.state() == replay(drain(registry)).state()


def test_secret_matches_accepts_only_the_hashed_secret() -> None:
    """The constant-time check accepts the right secret and refuses any other."""
    digest = tokens.hash_secret(SALT, SECRET)
    assert tokens.secret_matches(SALT, digest, SECRET)
    assert not tokens.secret_matches(SALT, digest, OTHER_SECRET)
    assert not tokens.secret_matches(OTHER_SALT, digest, SECRET)
    assert not tokens.secret_matches(SALT, digest, SECRET + "x")


def test_hash_secret_depends_on_the_salt() -> None:
    """The same secret hashes differently under different salts."""
    assert tokens.hash_secret(SALT, SECRET) != tokens.hash_secret(OTHER_SALT, SECRET)


def test_split_token_parts_a_well_formed_token() -> None:
    """A composed token splits back into its device id and secret, even a dotted secret."""
    dotted = SECRET + ".with.dots"
    assert (PHONE, dotted) == tokens.split_token(tokens.compose_token(PHONE, dotted))


def test_a_token_with_a_secret_of_exactly_the_minimum_length_is_accepted() -> None:
    """`SECRET_MIN_LENGTH` characters split and pair; one fewer does neither."""
    exact = "m" * tokens.SECRET_MIN_LENGTH
    assert (PHONE, exact) == tokens.split_token(token(secret=exact))
    assert None is tokens.split_token(token(secret=exact[1:]))
    registry = DeviceRegistry.create()
    assert token(secret=exact) == registry.pair(PHONE, "Pixel", SALT, exact, PAIRED_AT)
    assert PHONE == registry.authenticate(token(secret=exact))


def test_a_salt_of_exactly_the_minimum_length_is_accepted() -> None:
    """`SALT_MIN_BYTES` bytes of salt pair a device."""
    registry = DeviceRegistry.create()
    salt = bytes(tokens.SALT_MIN_BYTES)
    assert token() == registry.pair(PHONE, "Pixel", salt, SECRET, PAIRED_AT)


@pytest.mark.parametrize(
    ("given", "command", "error", "message"),
    [
        (
            [paired()],
            lambda r: r.authenticate(token(NEVER_PAIRED)),
            errors.InvalidDeviceTokenError,
            "device token is not recognised",
        ),
        (
            [paired()],
            lambda r: r.authenticate(token(secret=OTHER_SECRET)),
            errors.InvalidDeviceTokenError,
            "device token is not recognised",
        ),
        (
            [paired(), revoked()],
            lambda r: r.authenticate(token()),
            errors.DeviceRevokedError,
            f"device {PHONE} was revoked",
        ),
        (
            [paired()],
            paired(),
            errors.DeviceAlreadyPairedError,
            f"device {PHONE} is already paired",
        ),
        (
            [],
            paired(secret=SECRET[: tokens.SECRET_MIN_LENGTH - 1]),
            errors.WeakSecretError,
            "device secret or salt is too short",
        ),
        ([], revoked(), errors.UnknownDeviceError, f"no device {PHONE} was ever paired"),
        (
            [paired(), revoked()],
            revoked(),
            errors.DeviceRevokedError,
            f"device {PHONE} was already revoked",
        ),
    ],
    ids=[
        "unknown",
        "wrong-secret",
        "revoked",
        "paired-twice",
        "weak",
        "never-paired",
        "revoked-twice",
    ],
)
def test_each_refusal_says_what_went_wrong(
    given: list[Command], command: Command, error: type[Exception], message: str
) -> None:
    """A refusal carries one fixed sentence naming the device where it is known."""
    assert message == str(refused(history(*given), command, error))


def test_a_device_keeps_the_scopes_it_was_paired_with() -> None:
    """Scopes named at pairing are kept sorted and unique; none named means read only."""
    registry = DeviceRegistry.create()
    both = ("operator.write", "operator.read", "operator.write")
    registry.pair(PHONE, "Phone", SALT, SECRET, PAIRED_AT, scopes=both)
    registry.pair(LAPTOP, "Laptop", OTHER_SALT, OTHER_SECRET, PAIRED_AT)

    assert ("operator.read", "operator.write") == registry.devices[PHONE].scopes
    assert ("operator.read",) == registry.devices[LAPTOP].scopes
