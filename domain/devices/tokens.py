"""Device token format, hashing and constant-time checks; domain layer.

A device token is `<device id>.<secret>`. The registry stores only a salted hash of the
secret, so a leaked journal does not leak a usable token.
"""

from __future__ import annotations

import hashlib
import hmac

from domain.ids import DeviceId

SECRET_MIN_LENGTH = 32
SALT_MIN_BYTES = 16


def hash_secret(salt: bytes, secret: str) -> str:
    """The salted hash the registry keeps for `secret`, as hex."""
    return hmac.new(salt, secret.encode(), hashlib.sha256).hexdigest()


def secret_matches(salt: bytes, expected_hash: str, secret: str) -> bool:
    """Whether `secret` hashes to `expected_hash`, compared in constant time."""
    return hmac.compare_digest(hash_secret(salt, secret), expected_hash)


def compose_token(device_id: DeviceId, secret: str) -> str:
    """The bearer token a client stores for `device_id`."""
    return f"{device_id}.{secret}"


def split_token(token: str) -> tuple[DeviceId, str] | None:
    """The device id and secret of `token`, or None when it is malformed."""
    device_part, dot, secret = token.partition(".")
    if not dot or len(secret) < SECRET_MIN_LENGTH:
        return None
    try:
        return DeviceId(device_part), secret
    except ValueError:
        return None
