"""Pairing codes, device pairing and device-token checks for the daemon; adapter layer.

The daemon keeps one pairing code in memory at a time. A code is a temporary credential for
one device registration: a successful exchange consumes it, it expires after five minutes,
and it is discarded after `MAX_FAILED_ATTEMPTS` wrong guesses, so it cannot be brute-forced.
"""

from __future__ import annotations

import hmac
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol, TypeVar
from uuid import UUID

from pydantic import BaseModel, ConfigDict, ValidationError

from domain.devices.aggregate import REGISTRY_ID, DeviceRegistry
from domain.devices.errors import DeviceError
from domain.devices.events import DEFAULT_DEVICE_SCOPES, GATEWAY_SCOPES, DisplayName
from domain.errors import LedgerclawError
from domain.ids import DeviceId

T = TypeVar("T")

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
"""Crockford's base32: no I, L, O or U, so a code read aloud or copied by hand is unambiguous."""
CODE_LENGTH = 8
PAIRING_TTL_SECONDS = 300.0
MAX_FAILED_ATTEMPTS = 10
SEEN_INTERVAL = timedelta(seconds=60)
"""A device's `DeviceSeen` is recorded at most this often."""
_LOOKALIKES = str.maketrans({"I": "1", "L": "1", "O": "0"})

log = logging.getLogger(__name__)


class PairingError(LedgerclawError):
    """A pairing code could not be exchanged for a device token."""

    exit_code = 2


class PairingCodeExpiredError(PairingError):
    """The pairing code is past its five minutes."""


class PairingCodeInvalidError(PairingError):
    """The pairing code is not the current one, or it was used or discarded."""


class DeviceScopesInvalidError(PairingError):
    """A pairing code asked for no scope or for a scope the gateway does not have."""


class DeviceNameInvalidError(PairingError):
    """A device name is empty, longer than 100 characters, or not valid UTF-8."""


class PairingCode(BaseModel):
    """The one pairing code the daemon currently accepts."""

    model_config = ConfigDict(frozen=True)

    code: str
    """Formatted `XXXX-XXXX`."""
    expires_at: float
    """On the monotonic clock of the issuing `PairingCodes`."""
    name: DisplayName | None = None
    """The name the operator gave the device to come, if any."""
    scopes: tuple[str, ...] = DEFAULT_DEVICE_SCOPES
    """What the device to come may do on the gateway."""


def normalise_code(code: str) -> str:
    """The code as issued: upper case, no hyphens or spaces, look-alike letters as digits."""
    kept = "".join(c for c in code if c != "-" and not c.isspace())
    return kept.upper().translate(_LOOKALIKES)


class PairingCodes:
    """Holds the daemon's one current pairing code; thread-safe."""

    def __init__(
        self, ttl_seconds: float = PAIRING_TTL_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._current: PairingCode | None = None
        self._failures = 0
        self._lock = threading.Lock()

    def issue(
        self, name: str | None = None, scopes: tuple[str, ...] = DEFAULT_DEVICE_SCOPES
    ) -> PairingCode:
        """Make a new code for a device with `scopes`, replacing any previous one."""
        unknown = sorted(set(scopes) - set(GATEWAY_SCOPES))
        if unknown or not scopes:
            msg = f"scopes are some of {', '.join(GATEWAY_SCOPES)}; not {', '.join(unknown)}"
            raise DeviceScopesInvalidError(msg)
        raw = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
        half = CODE_LENGTH // 2
        try:
            code = PairingCode(
                code=f"{raw[:half]}-{raw[half:]}",
                expires_at=self._clock() + self.ttl_seconds,
                name=name,
                scopes=tuple(sorted(set(scopes))),
            )
        except ValidationError:
            msg = "a device name has 1 to 100 characters"
            raise DeviceNameInvalidError(msg) from None
        with self._lock:
            self._current, self._failures = code, 0
        return code

    def consume(self, code: str) -> PairingCode:
        """Take the current code if `code` matches it; it cannot be used again."""
        given = normalise_code(code).encode()
        with self._lock:
            current = self._current
            if current is None:
                msg = "pairing code is not valid; run `ledgerclaw daemon pair` for a new one"
                raise PairingCodeInvalidError(msg)
            if self._clock() >= current.expires_at:
                # Kept, so that every later try hears that it expired; it never matches again.
                msg = "pairing code has expired; run `ledgerclaw daemon pair` for a new one"
                raise PairingCodeExpiredError(msg)
            if not hmac.compare_digest(given, normalise_code(current.code).encode()):
                self._failures += 1
                if self._failures >= MAX_FAILED_ATTEMPTS:
                    self._current = None
                msg = "pairing code is not valid; check it or run `ledgerclaw daemon pair`"
                raise PairingCodeInvalidError(msg)
            self._current = None
            return current


class DeviceJournal(Protocol):
    """The part of the journal that pairing and token checks use."""

    def devices(self) -> DeviceRegistry:
        """The device registry (a new, unsaved one if no device was ever paired)."""
        ...

    def update_devices(self, command: Callable[[DeviceRegistry], T]) -> T:
        """Run `command` on the latest registry and store its events atomically."""
        ...

    def stream_version(self, stream_id: UUID) -> int:
        """How many events the stream holds (0 if none)."""
        ...


def pair_device(
    journal: DeviceJournal,
    name: str,
    now: datetime,
    scopes: tuple[str, ...] = DEFAULT_DEVICE_SCOPES,
) -> tuple[DeviceId, str]:
    """Pair a new device named `name` with `scopes` and return its id and its token.

    The registry is created with the first pairing. The token is returned only here; the
    journal keeps a salted hash of its secret, so it cannot be shown again.
    """
    device_id = DeviceId.new()
    secret = secrets.token_urlsafe(32)
    salt = os.urandom(16)
    token = journal.update_devices(
        lambda registry: registry.pair(device_id, name, salt, secret, now, scopes=scopes)
    )
    log.info("paired device %s (%s)", device_id, name)
    return device_id, token


class TokenAuthenticator:
    """Checks device tokens against the registry as stored, seeing every revocation at once.

    The registry is kept in memory and read again whenever its stream has grown, so a device
    revoked by another process is refused on its very next request. `authenticate` reads the
    stream's version through the journal (in a worker thread: it may wait for the file);
    `authenticate_kept` asks `head` instead, which never waits, and answers from the kept
    copy on the event loop whenever that copy is current and no sighting is due.
    """

    def __init__(
        self,
        journal: DeviceJournal,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        head: Callable[[], int | None] | None = None,
    ) -> None:
        self.journal = journal
        self.refused = 0
        """How many tokens were refused."""
        self._clock = clock
        self._head = head
        self._kept: tuple[DeviceRegistry, int] | None = None
        """The registry and the stream version it was read at, replaced whole, never changed."""
        self._lock = threading.Lock()

    def authenticate(self, token: str) -> DeviceId:
        """The active device that `token` names; a typed DeviceError otherwise."""
        with self._lock:
            try:
                registry = self._registry_now()
                device_id = registry.authenticate(token)
                self._note_seen(registry, device_id)
            except DeviceError:
                self.refused += 1
                raise
            return device_id

    def authenticate_kept(self, token: str) -> DeviceId | None:
        """The active device `token` names, from the kept copy if it is current; never waits.

        None when this cannot be decided here: no `head`, the head cannot say at once, the
        kept copy is older than the stream, or the device's sighting is due to be written.
        Then `authenticate` decides. A refusal raises the same typed DeviceError.
        """
        kept = self._kept
        if kept is None or self._head is None:
            return None
        registry, version = kept
        if self._head() != version:
            return None
        try:
            device_id = registry.authenticate(token)
        except DeviceError:
            self.refused += 1
            raise
        return None if self._sighting_due(registry, device_id, self._clock()) else device_id

    def current_version(self) -> int | None:
        """The kept copy's version if, asked without waiting, it is the registry as stored."""
        kept = self._kept
        if kept is None or self._head is None or self._head() != kept[1]:
            return None
        return kept[1]

    def scopes_of(self, device_id: object) -> tuple[str, ...]:
        """The gateway scopes `device_id` was paired with (none for an unknown device)."""
        with self._lock:
            record = self._registry_now().devices.get(DeviceId(str(device_id)))
        return () if record is None else record.scopes

    def revoked(self) -> tuple[frozenset[DeviceId], int]:
        """Every revoked device, as the journal holds the registry now, and that version."""
        with self._lock:
            registry = self._registry_now()
            version = self._kept[1] if self._kept is not None else 0
        return frozenset(d for d, r in registry.devices.items() if not r.active), version

    def _registry_now(self) -> DeviceRegistry:
        version = self.journal.stream_version(REGISTRY_ID)
        kept = self._kept
        if kept is None or version != kept[1]:
            # No stream yet: a new, unsaved registry, which refuses every token.
            registry = self.journal.devices() if version else DeviceRegistry.create()
            kept = self._kept = (registry, registry.version if version else 0)
        return kept[0]

    @staticmethod
    def _sighting_due(registry: DeviceRegistry, device_id: DeviceId, now: datetime) -> bool:
        last = registry.devices[device_id].last_seen_at
        return last is None or now - last >= SEEN_INTERVAL

    def _note_seen(self, registry: DeviceRegistry, device_id: DeviceId) -> None:
        now = self._clock()
        if not self._sighting_due(registry, device_id, now):
            return
        try:
            self.journal.update_devices(lambda latest: latest.mark_seen(device_id, now))
        except DeviceError:
            raise
        except LedgerclawError as error:
            # Being seen is bookkeeping: a busy journal must not lock a device out.
            log.warning("could not record that device %s was seen: %s", device_id, error)
