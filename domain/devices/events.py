"""Facts recorded in the DeviceRegistry stream; domain layer."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, ClassVar

from pydantic import AfterValidator, Field

from domain.base import Aggregate
from domain.ids import DeviceId
from domain.text import ShortText, check_text

GATEWAY_SCOPES = ("operator.read", "operator.write", "operator.approvals")
"""Every scope of the gateway a device may be granted."""
DEFAULT_DEVICE_SCOPES = ("operator.read",)
"""The scopes of a device paired without naming any (and of every device paired before)."""

DisplayName = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(check_text)]
HexDigest = Annotated[str, Field(pattern=r"^[0-9a-f]{32,128}$")]


class DeviceRegistryEvent(Aggregate.Event):
    """Base of every event in the DeviceRegistry stream except the first."""


class DeviceRegistryCreated(Aggregate.Created):
    """The registry of paired devices was created for this home."""

    TOPIC: ClassVar[str] = "ledgerclaw.devices.created"


class DevicePaired(DeviceRegistryEvent):
    """A device exchanged a pairing code for a token; only the token's salted hash is kept."""

    TOPIC: ClassVar[str] = "ledgerclaw.devices.paired"
    SPARSE_FIELDS: ClassVar[tuple[str, ...]] = ("scopes",)
    KEY_FIELDS = ("device_id", "display_name")

    device_id: DeviceId
    display_name: DisplayName
    salt: HexDigest
    token_hash: HexDigest
    paired_at: datetime
    scopes: tuple[ShortText, ...] = DEFAULT_DEVICE_SCOPES
    """What the device may do on the gateway; devices paired before scopes read only."""


class DeviceSeen(DeviceRegistryEvent):
    """A paired device authenticated."""

    TOPIC: ClassVar[str] = "ledgerclaw.devices.seen"
    KEY_FIELDS = ("device_id",)

    device_id: DeviceId
    seen_at: datetime


class DeviceRevoked(DeviceRegistryEvent):
    """A device's token stopped working, at once and for good."""

    TOPIC: ClassVar[str] = "ledgerclaw.devices.revoked"
    KEY_FIELDS = ("device_id",)

    device_id: DeviceId
    revoked_at: datetime


DEVICE_EVENTS: tuple[type[Aggregate.Event], ...] = (
    DeviceRegistryCreated,
    DevicePaired,
    DeviceSeen,
    DeviceRevoked,
)
