"""The home's paired devices: when each was paired, last seen and revoked; projection layer."""

from __future__ import annotations

from functools import singledispatchmethod

from domain.base import DomainEvent
from domain.devices.events import DevicePaired, DeviceRevoked, DeviceSeen
from projections.contract import Batch, Position, Table, utc_text
from projections.per_event import EventByEvent

DEVICES = Table(
    name="devices",
    columns={
        "device_id": str,
        "name": str,
        "created_at": str,
        "last_seen_at": str,
        "revoked_at": str,
    },
    pk=("device_id",),
    doc="One row per paired device: its name, when it was paired, last seen and revoked.",
)


class DeviceList(EventByEvent):
    """Which devices are paired, which are still active, and when each was last seen.

    A token's salt and hash never leave the registry's events, so the table is safe to show.
    """

    name = "devices"
    version = 2
    tables: tuple[Table, ...] = (DEVICES,)

    @singledispatchmethod
    def apply(self, event: DomainEvent, position: Position, batch: Batch) -> None:
        """Other events concern no device."""

    @apply.register
    def _(self, event: DevicePaired, _position: Position, batch: Batch) -> None:
        batch.add(
            "INSERT INTO devices (device_id, name, created_at) VALUES (?, ?, ?)",
            event.device_id,
            event.display_name,
            utc_text(event.paired_at),
        )

    @apply.register
    def _(self, event: DeviceSeen, _position: Position, batch: Batch) -> None:
        batch.add(
            "UPDATE devices SET last_seen_at = ? WHERE device_id = ?",
            utc_text(event.seen_at),
            event.device_id,
        )

    @apply.register
    def _(self, event: DeviceRevoked, _position: Position, batch: Batch) -> None:
        batch.add(
            "UPDATE devices SET revoked_at = ? WHERE device_id = ?",
            utc_text(event.revoked_at),
            event.device_id,
        )

    def finish(self, batch: Batch) -> None:
        """Nothing is recomputed at the end of a batch."""
