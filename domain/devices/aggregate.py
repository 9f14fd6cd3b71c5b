"""The DeviceRegistry aggregate: one per home; domain layer."""

from __future__ import annotations

from datetime import datetime
from functools import singledispatchmethod
from typing import ClassVar
from uuid import NAMESPACE_URL, uuid5

from pydantic import BaseModel, ConfigDict

from domain.base import Aggregate, AggregateSnapshot, DomainEvent, SnapshotState, Value
from domain.devices import errors, tokens
from domain.devices.events import (
    DEFAULT_DEVICE_SCOPES,
    DevicePaired,
    DeviceRegistryCreated,
    DeviceRevoked,
    DeviceSeen,
)
from domain.ids import DeviceId

REGISTRY_ID = uuid5(NAMESPACE_URL, "ledgerclaw:device-registry")


class DeviceRecord(Value):
    """What the registry knows of one device."""

    device_id: DeviceId
    display_name: str
    salt: str
    token_hash: str
    paired_at: datetime
    last_seen_at: datetime | None = None
    revoked_at: datetime | None = None
    scopes: tuple[str, ...] = DEFAULT_DEVICE_SCOPES

    @property
    def active(self) -> bool:
        """Whether the device's token still works."""
        return self.revoked_at is None


class DeviceRegistryState(BaseModel):
    """Everything the registry knows; replay and live state compare equal on it."""

    model_config = ConfigDict(frozen=True)

    devices: dict[DeviceId, DeviceRecord]


class DeviceRegistrySnapshotState(SnapshotState):
    """The typed state a DeviceRegistry snapshot stores."""

    devices: dict[DeviceId, DeviceRecord]


class DeviceRegistrySnapshot(AggregateSnapshot):
    """A DeviceRegistry at one version."""

    TOPIC: ClassVar[str] = "ledgerclaw.devices.snapshot"
    SPARSE_FIELDS: ClassVar[tuple[str, ...]] = ("state.devices.*.scopes",)

    state: DeviceRegistrySnapshotState


class DeviceRegistry(Aggregate):
    """The paired devices of one home."""

    JOURNAL_NAME = "ledgerclaw.devices"
    Snapshot = DeviceRegistrySnapshot

    def __init__(self) -> None:
        self.devices: dict[DeviceId, DeviceRecord] = {}

    @classmethod
    def create(cls) -> DeviceRegistry:
        """Create the home's registry; its id is fixed, so a second one cannot be saved."""
        return cls._create(DeviceRegistryCreated, id=REGISTRY_ID)

    def pair(  # noqa: PLR0913 - the facts of one pairing
        self,
        device_id: DeviceId,
        display_name: str,
        salt: bytes,
        secret: str,
        paired_at: datetime,
        *,
        scopes: tuple[str, ...] = DEFAULT_DEVICE_SCOPES,
    ) -> str:
        """Pair a device with its scopes and return its bearer token; only a hash is kept."""
        if device_id in self.devices:
            msg = f"device {device_id} is already paired"
            raise errors.DeviceAlreadyPairedError(msg)
        if len(secret) < tokens.SECRET_MIN_LENGTH or len(salt) < tokens.SALT_MIN_BYTES:
            msg = "device secret or salt is too short"
            raise errors.WeakSecretError(msg)
        self.trigger_event(
            DevicePaired,
            device_id=device_id,
            display_name=display_name,
            salt=salt.hex(),
            token_hash=tokens.hash_secret(salt, secret),
            paired_at=paired_at,
            scopes=tuple(sorted(set(scopes))),
        )
        return tokens.compose_token(device_id, secret)

    def authenticate(self, token: str) -> DeviceId:
        """The active device that `token` belongs to; the secret is compared in constant time."""
        parts = tokens.split_token(token)
        record = self.devices.get(parts[0]) if parts else None
        if parts is None or record is None:
            msg = "device token is not recognised"
            raise errors.InvalidDeviceTokenError(msg)
        if not tokens.secret_matches(bytes.fromhex(record.salt), record.token_hash, parts[1]):
            msg = "device token is not recognised"
            raise errors.InvalidDeviceTokenError(msg)
        if not record.active:
            msg = f"device {record.device_id} was revoked"
            raise errors.DeviceRevokedError(msg)
        return record.device_id

    def mark_seen(self, device_id: DeviceId, seen_at: datetime) -> None:
        """Record that an active device authenticated."""
        self._active(device_id)
        self.trigger_event(DeviceSeen, device_id=device_id, seen_at=seen_at)

    def revoke(self, device_id: DeviceId, revoked_at: datetime) -> None:
        """Revoke a device; its token stops working at once."""
        self._active(device_id)
        self.trigger_event(DeviceRevoked, device_id=device_id, revoked_at=revoked_at)

    def state(self) -> DeviceRegistryState:
        """An immutable copy of the whole state."""
        return DeviceRegistryState(devices=dict(self.devices))

    def _active(self, device_id: DeviceId) -> DeviceRecord:
        record = self.devices.get(device_id)
        if record is None:
            msg = f"no device {device_id} was ever paired"
            raise errors.UnknownDeviceError(msg)
        if not record.active:
            msg = f"device {device_id} was already revoked"
            raise errors.DeviceRevokedError(msg)
        return record

    @singledispatchmethod
    def apply_event(self, event: DomainEvent) -> None:
        """Change state for `event`; every state change of the registry happens here."""
        msg = f"DeviceRegistry cannot apply {type(event).__name__}"
        raise TypeError(msg)

    @apply_event.register
    def _(self, event: DevicePaired) -> None:
        self.devices[event.device_id] = DeviceRecord(
            device_id=event.device_id,
            display_name=event.display_name,
            salt=event.salt,
            token_hash=event.token_hash,
            paired_at=event.paired_at,
            scopes=event.scopes,
        )

    @apply_event.register
    def _(self, event: DeviceSeen) -> None:
        record = self.devices[event.device_id]
        self.devices[event.device_id] = record.model_copy(update={"last_seen_at": event.seen_at})

    @apply_event.register
    def _(self, event: DeviceRevoked) -> None:
        record = self.devices[event.device_id]
        self.devices[event.device_id] = record.model_copy(update={"revoked_at": event.revoked_at})
