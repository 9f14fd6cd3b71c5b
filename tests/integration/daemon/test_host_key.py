"""The host key on disk and the local-control proofs signed with it; integration tests."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from adapters.home import Home
from adapters.security.host_key import (
    HOST_KEY_PATH,
    KEY_BYTES,
    MAX_USED_NONCES,
    HostKeyError,
    InvalidProofError,
    ProofVerifier,
    load_host_key,
    load_or_create_host_key,
    sign_proof,
)

NOW = 1_800_000_000.0
KEY = bytes(range(32))


class Clock:
    """A settable wall clock."""

    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        """The current instant."""
        return self.now


@pytest.fixture
def home(tmp_path: Path) -> Home:
    """A home that does not exist yet."""
    return Home(tmp_path / "home")


def test_the_key_is_created_private_and_read_back_unchanged(home: Home) -> None:
    """The first call makes a 32-byte key, mode 0600 in a 0700 directory; later calls read it."""
    key = load_or_create_host_key(home)
    path = home.root / HOST_KEY_PATH

    assert KEY_BYTES == len(key)
    assert 0o600 == path.stat().st_mode & 0o777
    assert 0o700 == path.parent.stat().st_mode & 0o777
    assert key == load_or_create_host_key(home)
    assert key == load_host_key(home)
    assert [path] == list(path.parent.iterdir())


def test_a_key_others_can_read_is_refused_with_the_fix(home: Home) -> None:
    """A group-readable key file is refused, naming the file and `chmod 600`."""
    load_or_create_host_key(home)
    path = home.root / HOST_KEY_PATH
    path.chmod(0o640)

    with pytest.raises(HostKeyError) as caught:
        load_or_create_host_key(home)

    assert str(path) in str(caught.value)
    assert "chmod 600" in str(caught.value)
    assert 3 == caught.value.exit_code


def test_a_key_directory_others_can_enter_is_refused(home: Home) -> None:
    """A keys directory open to other users is refused with `chmod 700`."""
    load_or_create_host_key(home)
    (home.root / "keys").chmod(0o755)

    with pytest.raises(HostKeyError, match="chmod 700"):
        load_host_key(home)


@pytest.mark.skipif(os.getuid() != 0, reason="only root can give a file to another user")
def test_a_key_owned_by_another_user_is_refused(home: Home) -> None:
    """A key file owned by someone else is refused even with mode 0600."""
    load_or_create_host_key(home)
    os.chown(home.root / HOST_KEY_PATH, 65534, 65534)

    with pytest.raises(HostKeyError, match="not owned by this user"):
        load_host_key(home)


def test_a_key_of_the_wrong_length_is_refused(home: Home) -> None:
    """A key file that does not hold exactly 32 bytes is an error, not a shorter key."""
    load_or_create_host_key(home)
    (home.root / HOST_KEY_PATH).write_bytes(b"short")

    with pytest.raises(HostKeyError, match="5 bytes"):
        load_or_create_host_key(home)


def test_a_symlinked_key_is_refused(home: Home, tmp_path: Path) -> None:
    """The key is never read through a symbolic link."""
    load_or_create_host_key(home)
    elsewhere = tmp_path / "elsewhere.key"
    elsewhere.write_bytes(bytes(32))
    elsewhere.chmod(0o600)
    (home.root / HOST_KEY_PATH).unlink()
    (home.root / HOST_KEY_PATH).symlink_to(elsewhere)

    with pytest.raises(HostKeyError, match="cannot open host key"):
        load_or_create_host_key(home)


def test_a_missing_key_is_not_created_by_a_plain_load(home: Home) -> None:
    """Loading without creating refuses a missing key and leaves the home as it was."""
    with pytest.raises(HostKeyError, match="daemon run"):
        load_host_key(home)

    assert not home.root.exists()


def test_racing_threads_end_with_one_key(home: Home) -> None:
    """Threads that create the key at once all get the same key."""
    barrier = threading.Barrier(8)
    keys: list[bytes] = []

    def create() -> None:
        barrier.wait()
        keys.append(load_or_create_host_key(home))

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert 8 == len(keys)
    assert {load_host_key(home)} == set(keys)
    assert [home.root / HOST_KEY_PATH] == list((home.root / "keys").iterdir())


@pytest.mark.slow
def test_racing_processes_end_with_one_key(home: Home) -> None:
    """Processes that create the key at once all get the same key."""
    script = (
        "import sys, time; from pathlib import Path\n"
        "from adapters.home import Home\n"
        "from adapters.security.host_key import load_or_create_host_key\n"
        "go = Path(sys.argv[2])\n"
        "while not go.exists(): time.sleep(0.001)\n"
        "print(load_or_create_host_key(Home(Path(sys.argv[1]))).hex())\n"
    )
    go = home.root.parent / "go"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(home.root), str(go)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).parents[3],
        )
        for _ in range(4)
    ]
    go.touch()
    outputs = {child.communicate(timeout=60)[0].strip() for child in children}

    assert {load_host_key(home).hex()} == outputs


def test_a_fresh_proof_is_accepted_once() -> None:
    """A proof signed with the key for the issued nonce and operation passes, once."""
    verifier = ProofVerifier(KEY, clock=Clock())
    proof = sign_proof(KEY, "n1", "status", now=NOW)

    verifier.verify(proof, "n1", "status")

    with pytest.raises(InvalidProofError, match="already used"):
        verifier.verify(proof, "n1", "status")


@pytest.mark.parametrize(
    ("signed_with", "nonce", "operation", "now", "reason"),
    [
        (bytes(32), "n1", "status", NOW, "host key"),
        (KEY, "n2", "status", NOW, "another challenge"),
        (KEY, "n1", "stop", NOW, "not 'stop'"),
        (KEY, "n1", "status", NOW + 30, "expired"),
        (KEY, "n1", "status", NOW - 200, "more than 120 seconds"),
    ],
)
def test_a_proof_is_refused_for_each_flaw(
    signed_with: bytes, nonce: str, operation: str, now: float, reason: str
) -> None:
    """Wrong key, another nonce, another operation, expiry and far expiry are all refused."""
    verifier = ProofVerifier(KEY, clock=Clock(now))
    proof = sign_proof(signed_with, "n1", "status", now=NOW)

    with pytest.raises(InvalidProofError, match=reason) as caught:
        verifier.verify(proof, nonce, operation)

    assert 2 == caught.value.exit_code


def test_a_proof_with_an_edited_field_is_refused() -> None:
    """Changing the operation or expiry of a signed proof breaks its MAC."""
    verifier = ProofVerifier(KEY, clock=Clock())
    proof = sign_proof(KEY, "n1", "status", now=NOW)

    for edited in (
        proof.model_copy(update={"operation": "stop"}),
        proof.model_copy(update={"expires_at": proof.expires_at + 60}),
    ):
        with pytest.raises(InvalidProofError, match="host key"):
            verifier.verify(edited, "n1", edited.operation)


def test_the_signed_encoding_keeps_fields_apart() -> None:
    """Moving characters between nonce and operation changes the MAC."""
    first = sign_proof(KEY, "ab", "c", now=NOW)
    second = sign_proof(KEY, "a", "bc", now=NOW)

    assert first.mac != second.mac


def test_used_nonces_are_forgotten_once_their_proofs_expire() -> None:
    """The replay memory drops a nonce after its proof's expiry, so it stays bounded."""
    clock = Clock()
    verifier = ProofVerifier(KEY, clock=clock)
    for index in range(5):
        verifier.verify(sign_proof(KEY, f"n{index}", "status", now=NOW), f"n{index}", "status")

    clock.now = NOW + 31
    verifier.verify(sign_proof(KEY, "late", "status", now=clock.now), "late", "status")

    assert ["late"] == list(verifier._used)


def test_the_replay_memory_refuses_new_proofs_when_full() -> None:
    """Past the nonce limit, new proofs are refused rather than remembered without bound."""
    verifier = ProofVerifier(KEY, clock=Clock())
    verifier._used = {f"n{index}": int(NOW) + 30 for index in range(MAX_USED_NONCES)}

    with pytest.raises(InvalidProofError, match="too many"):
        verifier.verify(sign_proof(KEY, "new", "status", now=NOW), "new", "status")
