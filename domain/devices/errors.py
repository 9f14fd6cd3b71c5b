"""Typed refusals of DeviceRegistry commands; domain layer."""

from __future__ import annotations

from domain.errors import DomainError


class DeviceError(DomainError):
    """A DeviceRegistry command broke an invariant."""


class DeviceAlreadyPairedError(DeviceError):
    """A device with this id is already in the registry."""


class UnknownDeviceError(DeviceError):
    """No device with this id was ever paired."""

    exit_code = 6


class DeviceRevokedError(DeviceError):
    """The device was revoked; its token no longer works."""


class InvalidDeviceTokenError(DeviceError):
    """The token is malformed or does not match any paired device."""


class WeakSecretError(DeviceError):
    """A device secret or salt is too short to be safe."""
