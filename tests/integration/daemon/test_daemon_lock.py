"""The daemon lock against real processes: one daemon per home, freed when its holder dies."""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import pytest

from adapters.errors import HomeError
from adapters.home import Home
from adapters.hosting.daemon_lock import DaemonAlreadyRunningError, DaemonLock, is_daemon_running
from adapters.hosting.daemon_state import read_daemon_state

TIMEOUT = 30
HOLDER = """
import subprocess, sys, time
from pathlib import Path
from adapters.hosting.daemon_lock import DaemonLock
from adapters.home import Home

DaemonLock(Home(Path(sys.argv[1]))).acquire(int(sys.argv[2]))
child = None
if sys.argv[3] == "child":
    quiet = subprocess.DEVNULL
    child = subprocess.Popen(["sleep", "60"], close_fds=False, stdout=quiet, stderr=quiet)
print(child.pid if child else 0, flush=True)
time.sleep(120)
"""
"""Takes the lock, optionally starts a child that outlives it, prints the child's pid, waits."""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A home directory that does not exist yet."""
    return tmp_path / "home"


@contextmanager
def holder(root: Path, port: int, *, child: bool = False) -> Iterator[Holder]:
    """A separate process holding the lock, killed when the block ends (its child too)."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root), str(port), "child" if child else "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    child_pid = 0
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], TIMEOUT)
        assert ready, "the holder printed nothing in time"
        line = process.stdout.readline().strip()
        assert line, "the holder ended before taking the lock"
        child_pid = int(line)
        yield Holder(process, child_pid)
    finally:
        if child_pid:
            os.kill(child_pid, signal.SIGKILL)
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=TIMEOUT)


class Holder(NamedTuple):
    """The holding process and the pid of the child it started (0 for none)."""

    process: subprocess.Popen[str]
    child_pid: int

    @property
    def pid(self) -> int:
        """The holder's process id."""
        return self.process.pid

    def kill(self) -> None:
        """SIGKILL the holder and reap it: it never runs its own clean-up."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=TIMEOUT)


def test_acquire_records_pid_port_and_start_in_private_files(root: Path) -> None:
    """The lock file holds {pid, port, started_at} as JSON, the pid file the pid; both 0600."""
    lock = DaemonLock(Home(root))
    lock.acquire(7431)
    try:
        state = json.loads((root / "daemon.lock").read_text())
        assert {"pid", "port", "started_at"} == set(state)
        assert (os.getpid(), 7431) == (state["pid"], state["port"])
        assert state["started_at"].endswith("+00:00")
        assert f"{os.getpid()}\n" == (root / "daemon.pid").read_text()
        modes = [
            stat.S_IMODE((root / name).stat().st_mode) for name in ("daemon.lock", "daemon.pid")
        ]
        assert [0o600, 0o600] == modes
        read = read_daemon_state(Home(root))
        assert read is not None
        assert (os.getpid(), 7431, state["started_at"]) == (read.pid, read.port, read.started_at)
    finally:
        lock.release()


def test_a_second_start_names_the_live_holder_pid_and_port(root: Path) -> None:
    """While another process holds the lock, acquire fails naming that process and its port."""
    with holder(root, 7555) as held:
        pid = held.pid
        lock = DaemonLock(Home(root))
        with pytest.raises(DaemonAlreadyRunningError) as caught:
            lock.acquire(7431)

        assert f"a daemon is already running for home {root} (pid {pid}, port 7555)" == str(
            caught.value
        )
        assert 3 == caught.value.exit_code
        assert not lock.held
        assert is_daemon_running(Home(root))
        assert f"{pid}\n" == (root / "daemon.pid").read_text()


@pytest.mark.slow
def test_a_holder_killed_with_sigkill_leaves_files_but_not_the_lock(root: Path) -> None:
    """After SIGKILL the stale files stay, yet the next start takes the lock and rewrites them."""
    with holder(root, 7555) as held:
        held.kill()
        assert str(held.pid) == (root / "daemon.pid").read_text().strip()
        assert not is_daemon_running(Home(root))

        with DaemonLock(Home(root)) as lock:
            lock.acquire(7600)
            state = read_daemon_state(Home(root))
            assert state is not None
            assert (os.getpid(), 7600) == (state.pid, state.port)
            assert f"{os.getpid()}\n" == (root / "daemon.pid").read_text()


@pytest.mark.slow
def test_a_child_process_of_the_daemon_does_not_keep_the_lock(root: Path) -> None:
    """A process the daemon started (a shell tool) outlives it without inheriting the lock."""
    with holder(root, 7555, child=True) as held:
        held.kill()
        os.kill(held.child_pid, 0)

        assert not is_daemon_running(Home(root))


def test_release_removes_the_pid_file_and_empties_the_lock_file(root: Path) -> None:
    """Release deletes daemon.pid, keeps daemon.lock empty, frees the lock; twice is harmless."""
    lock = DaemonLock(Home(root))
    lock.acquire(7431)
    lock.release()
    lock.release()

    assert not (root / "daemon.pid").exists()
    assert b"" == (root / "daemon.lock").read_bytes()
    assert read_daemon_state(Home(root)) is None
    assert not is_daemon_running(Home(root))


def test_the_context_manager_releases_on_an_error(root: Path) -> None:
    """Leaving the `with` block by an exception releases the lock it took."""
    lock = DaemonLock(Home(root))

    def serve_and_fail() -> None:
        with lock:
            lock.acquire(7431)
            raise RuntimeError

    with pytest.raises(RuntimeError):
        serve_and_fail()

    assert not lock.held
    assert not is_daemon_running(Home(root))
    assert not (root / "daemon.pid").exists()


def test_a_holder_whose_state_is_unreadable_is_reported_as_pid_unknown(root: Path) -> None:
    """A lock held over a file that is not JSON still refuses the start, with pid unknown."""
    root.mkdir()
    (root / "daemon.lock").write_text("garbage")
    with (root / "daemon.lock").open("rb") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(DaemonAlreadyRunningError) as caught:
            DaemonLock(Home(root)).acquire(7431)

    assert f"a daemon is already running for home {root} (pid unknown)" == str(caught.value)
    assert "garbage" == (root / "daemon.lock").read_text()


def test_a_probe_does_not_block_a_start(root: Path) -> None:
    """is_daemon_running releases its probe at once, so a start right after it succeeds."""
    root.mkdir()
    (root / "daemon.lock").touch()

    assert not is_daemon_running(Home(root))
    with DaemonLock(Home(root)) as lock:
        lock.acquire(7431)
        assert lock.held


def test_an_existing_lock_file_is_made_owner_only(root: Path) -> None:
    """A daemon.lock left readable by others becomes 0600 when the lock is taken."""
    root.mkdir()
    (root / "daemon.lock").touch(mode=0o644)
    (root / "daemon.lock").chmod(0o644)

    with DaemonLock(Home(root)) as lock:
        lock.acquire(7431)
        assert 0o600 == stat.S_IMODE((root / "daemon.lock").stat().st_mode)


def test_a_lock_file_that_is_a_symlink_is_refused(root: Path, tmp_path: Path) -> None:
    """The lock is never taken through a link to another file."""
    root.mkdir()
    target = tmp_path / "elsewhere"
    target.write_text("")
    (root / "daemon.lock").symlink_to(target)

    with pytest.raises(HomeError, match="cannot open the daemon lock"):
        DaemonLock(Home(root)).acquire(7431)
    assert "" == target.read_text()


def test_probing_a_home_that_does_not_exist_creates_nothing(root: Path) -> None:
    """is_daemon_running on a missing home answers False and leaves no directory."""
    assert not is_daemon_running(Home(root))
    assert not root.exists()
