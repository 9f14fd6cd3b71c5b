"""The home's host key and the local-control proofs signed with it; adapter layer.

A local-control proof shows that a process can read the home's host key: an HMAC-SHA256 of
the key over the daemon's one-time challenge, one named operation and an expiry. It
authorizes that one operation for a short while and is not a device token.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import orjson
from pydantic import BaseModel, ConfigDict, Field

from adapters.home import Home, ensure_home
from domain.errors import LedgerclawError

HOST_KEY_PATH = Path("keys") / "host.key"
"""Where the host key lives, relative to the home's root."""
KEY_BYTES = 32
PROOF_TTL_SECONDS = 30
MAX_PROOF_TTL_SECONDS = 120
"""A proof that claims to stay valid longer than this is refused."""
MAX_USED_NONCES = 10_000
"""Nonces are remembered until their proof expires; past this many, new proofs are refused."""
_DOMAIN = b"ledgerclaw local-control proof v1\n"


class HostKeyError(LedgerclawError):
    """The host key cannot be read or created safely."""

    exit_code = 3


class InvalidProofError(LedgerclawError):
    """A local-control proof was refused."""

    exit_code = 2


class LocalControlProof(BaseModel):
    """Proof that the sender holds the host key, for one operation until `expires_at`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    operation: str = Field(min_length=1, max_length=128)
    nonce: str = Field(min_length=1, max_length=128)
    expires_at: int
    """Unix seconds."""
    mac: str = Field(pattern=r"^[0-9a-f]{64}$")


def load_or_create_host_key(home: Home) -> bytes:
    """The home's host key, created with mode 0600 if missing; racing creators agree on one key."""
    path = home.root / HOST_KEY_PATH
    if not path.exists():
        _create(path, home)
    return load_host_key(home)


def load_host_key(home: Home) -> bytes:
    """The home's existing host key, refused if other users could read or replace it."""
    path = home.root / HOST_KEY_PATH
    _check_private(path.parent, "directory", "chmod 700")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        msg = f"no host key at {path}; `ledgerclaw daemon run` creates it"
        raise HostKeyError(msg) from None
    except OSError as error:
        msg = f"cannot open host key {path}: {error.strerror or error}"
        raise HostKeyError(msg) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        msg = f"host key {path} is not a regular file"
        raise HostKeyError(msg)
    with os.fdopen(fd, "rb") as file:
        _check_mode(path, info, "file", "chmod 600")
        key = file.read(KEY_BYTES + 1)
    if len(key) != KEY_BYTES:
        msg = (
            f"host key {path} holds {len(key)} bytes, not {KEY_BYTES}; delete it to make a new one"
        )
        raise HostKeyError(msg)
    return key


def _create(path: Path, home: Home) -> None:
    ensure_home(home)
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        _check_private(path.parent, "directory", "chmod 700")
        fd, temp = tempfile.mkstemp(prefix=".host.key.", dir=path.parent)  # mode 0600
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(secrets.token_bytes(KEY_BYTES))
                file.flush()
                os.fsync(file.fileno())
            # A hard link never replaces an existing name: a racing creator that linked
            # first wins, and every process then reads that one key.
            with contextlib.suppress(FileExistsError):
                os.link(temp, path)
        finally:
            Path(temp).unlink()
        directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    except OSError as error:
        msg = f"cannot create host key {path}: {error.strerror or error}"
        raise HostKeyError(msg) from None


def _check_private(path: Path, kind: str, fix: str) -> None:
    try:
        info = path.stat()
    except FileNotFoundError:
        return
    _check_mode(path, info, kind, fix)


def _check_mode(path: Path, info: os.stat_result, kind: str, fix: str) -> None:
    if info.st_uid != os.getuid():
        msg = f"host key {kind} {path} is not owned by this user; fix its owner, then {fix} {path}"
        raise HostKeyError(msg)
    if info.st_mode & 0o077:
        msg = f"host key {kind} {path} is open to other users; run `{fix} {path}`"
        raise HostKeyError(msg)


def _mac(key: bytes, nonce: str, operation: str, expires_at: int) -> str:
    # Sorted-key JSON keeps the three fields apart whatever characters they hold.
    signed = {"expires_at": expires_at, "nonce": nonce, "operation": operation}
    message = _DOMAIN + orjson.dumps(signed, option=orjson.OPT_SORT_KEYS)
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def sign_proof(
    key: bytes,
    nonce: str,
    operation: str,
    ttl_seconds: int = PROOF_TTL_SECONDS,
    now: float | None = None,
) -> LocalControlProof:
    """A proof for `operation` answering the challenge `nonce`, valid for `ttl_seconds`."""
    expires_at = int(time.time() if now is None else now) + ttl_seconds
    return LocalControlProof(
        operation=operation,
        nonce=nonce,
        expires_at=expires_at,
        mac=_mac(key, nonce, operation, expires_at),
    )


class ProofVerifier:
    """Checks proofs against the host key; each nonce is accepted once."""

    def __init__(self, key: bytes, clock: Callable[[], float] = time.time) -> None:
        self._key = key
        self._clock = clock
        self._used: dict[str, int] = {}
        self._lock = threading.Lock()

    def verify(self, proof: LocalControlProof, nonce: str, operation: str) -> None:
        """Accept `proof` for the challenge `nonce` and `operation`, or raise InvalidProofError."""
        expected = _mac(self._key, proof.nonce, proof.operation, proof.expires_at)
        if not hmac.compare_digest(expected, proof.mac):
            _refuse("proof was not signed with this home's host key")
        now = self._clock()
        if proof.expires_at <= now:
            _refuse("proof has expired")
        if proof.expires_at > now + MAX_PROOF_TTL_SECONDS:
            _refuse(f"proof claims to stay valid for more than {MAX_PROOF_TTL_SECONDS} seconds")
        if not hmac.compare_digest(proof.nonce, nonce):
            _refuse("proof answers another challenge")
        if proof.operation != operation:
            _refuse(f"proof is for {proof.operation!r}, not {operation!r}")
        with self._lock:
            self._used = {n: exp for n, exp in self._used.items() if exp > now}
            if proof.nonce in self._used:
                _refuse("proof was already used")
            if len(self._used) >= MAX_USED_NONCES:
                _refuse("too many proofs in flight; try again shortly")
            self._used[proof.nonce] = proof.expires_at


def _refuse(message: str) -> NoReturn:
    raise InvalidProofError(message)
