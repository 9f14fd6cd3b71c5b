"""The sandbox's ruleset: which hierarchies a command may reach, built from real directories."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.sandbox import launch
from adapters.sandbox.ruleset import (
    MAX_RULES,
    READ,
    WRITE,
    Reach,
    RulesetError,
    build_ruleset,
    toolchains,
)
from adapters.sandbox.sandbox import LAUNCHER
from domain.authorization.roots import RootKind, TrustedRoot
from domain.values.authorization import FileOperation


def _root(path: Path, *operations: FileOperation) -> TrustedRoot:
    real = os.path.realpath(path)
    return TrustedRoot(
        path=real, real=real, kind=RootKind.CONFIGURED, operations=frozenset(operations)
    )


def _rules(reach: Reach) -> dict[str, int]:
    return {rule.path: rule.rights for rule in build_ruleset(reach, network=False).rules}


def test_a_root_gets_the_rights_its_operations_grant(tmp_path: Path) -> None:
    """A read root is readable only; a write root is readable and writable."""
    reader, writer = tmp_path / "r", tmp_path / "w"
    reader.mkdir()
    writer.mkdir()
    reach = Reach(
        roots=(_root(reader, FileOperation.READ), _root(writer, FileOperation.WRITE)),
        protected=(),
        home=None,
        tmp_dir=str(tmp_path / "tmp"),
    )

    rules = _rules(reach)

    assert READ == rules[str(reader)]
    assert READ | WRITE == rules[str(writer)]


def test_a_root_holding_protected_paths_is_carved_around_them(tmp_path: Path) -> None:
    """The root's other entries are allowed, level by level, and never a protected one."""
    root = tmp_path / "root"
    (root / "home" / "keys").mkdir(parents=True)
    (root / "home" / "sessions").mkdir()
    (root / "home" / "config.toml").write_text("")
    (root / "src").mkdir()
    (root / "README").write_text("")
    reach = Reach(
        roots=(_root(root, FileOperation.WRITE),),
        protected=(str(root / "home" / "keys"), str(root / "home" / "config.toml")),
        home=None,
        tmp_dir=str(tmp_path / "tmp"),
    )

    ruleset = build_ruleset(reach, network=False)
    paths = {rule.path for rule in ruleset.rules}

    assert {str(root / "README"), str(root / "src"), str(root / "home" / "sessions")} <= paths
    assert str(root) not in paths
    assert not any(path.startswith(str(root / "home" / "keys")) for path in paths)
    assert str(root / "home" / "config.toml") not in paths
    assert (str(root),) == ruleset.carved


def test_the_home_is_left_out_of_every_root_but_the_sessions_own(tmp_path: Path) -> None:
    """A root holding the home loses the home; the session's envelope inside it stays."""
    home = tmp_path / "home"
    envelope = home / "sessions" / "s1"
    envelope.mkdir(parents=True)
    (home / "sessions" / "s2").mkdir()
    reach = Reach(
        roots=(_root(tmp_path, FileOperation.READ), _root(envelope, *FileOperation)),
        protected=(),
        home=str(home),
        tmp_dir=str(envelope / "tmp"),
    )

    paths = set(_rules(reach))

    assert str(envelope) in paths
    assert not any(p.startswith(str(home / "sessions" / "s2")) for p in paths)
    assert str(home) not in paths


def test_a_link_among_a_carved_roots_entries_is_not_allowed(tmp_path: Path) -> None:
    """A link beside a protected path is skipped: allowing it would allow its target."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "secret").write_text("")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "out").symlink_to(outside)
    reach = Reach(
        roots=(_root(root, FileOperation.READ),),
        protected=(str(root / "secret"),),
        home=None,
        tmp_dir=str(tmp_path / "tmp"),
    )

    paths = set(_rules(reach))

    assert str(root / "out") not in paths
    assert str(outside) not in paths


def test_a_system_path_holding_a_protected_path_is_left_out_whole(tmp_path: Path) -> None:
    """A toolchain prefix that contains the home is not carved but dropped."""
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    home = prefix / "home"
    home.mkdir()
    reach = Reach(
        roots=(),
        protected=(),
        home=str(home),
        tmp_dir=str(tmp_path / "tmp"),
        search_path=str(prefix / "bin"),
    )

    paths = set(_rules(reach))

    assert str(prefix / "bin") in paths
    assert str(prefix) not in paths


def test_toolchains_are_each_path_entry_and_the_prefix_of_a_bin(tmp_path: Path) -> None:
    """PATH entries are resolved; `bin` brings its prefix; relative entries are ignored."""
    (tmp_path / "opt" / "bin").mkdir(parents=True)
    (tmp_path / "tools").mkdir()
    link = tmp_path / "linked"
    link.symlink_to(tmp_path / "opt" / "bin")
    search = os.pathsep.join([str(link), str(tmp_path / "tools"), "relative", "/"])

    found = toolchains(search)

    assert (str(tmp_path / "opt" / "bin"), str(tmp_path / "opt"), str(tmp_path / "tools")) == found


def test_a_carving_that_needs_too_many_rules_cannot_be_expressed(tmp_path: Path) -> None:
    """Beyond the rule bound the ruleset is refused rather than silently cut."""
    root = tmp_path / "root"
    root.mkdir()
    for index in range(MAX_RULES + 1):
        (root / f"f{index}").touch()
    (root / "zz-secret").touch()
    reach = Reach(
        roots=(_root(root, FileOperation.READ),),
        protected=(str(root / "zz-secret"),),
        home=None,
        tmp_dir=str(tmp_path / "tmp"),
    )

    with pytest.raises(RulesetError, match="more than"):
        build_ruleset(reach, network=False)


def test_the_digest_changes_with_the_rules_and_the_network(tmp_path: Path) -> None:
    """Equal digests mean equal confinement; another rule or the network changes it."""
    root = tmp_path / "root"
    root.mkdir()
    reach = Reach(roots=(), protected=(), home=None, tmp_dir=str(tmp_path / "tmp"))
    wider = Reach(
        roots=(_root(root, FileOperation.READ),),
        protected=(),
        home=None,
        tmp_dir=str(tmp_path / "tmp"),
    )

    base = build_ruleset(reach, network=False).digest()

    assert base == build_ruleset(reach, network=False).digest()
    assert base != build_ruleset(wider, network=False).digest()
    assert base != build_ruleset(reach, network=True).digest()


@pytest.mark.skipif(launch.abi_version() < 1, reason="needs Landlock")
@pytest.mark.parametrize(
    "ruleset",
    [["{not a rule"], ["--allow=x:/usr"], ["--allow=13:relative"], ["--abi=seven"]],
    ids=["unknown-word", "bad-rights", "relative-path", "bad-abi"],
)
def test_the_launcher_reports_an_unusable_ruleset_and_runs_nothing(
    tmp_path: Path, ruleset: list[str]
) -> None:
    """A ruleset it cannot read exits 126 with one line, and the command never runs."""
    marker = tmp_path / "ran"
    result = subprocess.run(
        [sys.executable, "-I", "-S", LAUNCHER, *ruleset, "--", "/bin/touch", str(marker)],
        capture_output=True,
        text=True,
        check=False,
    )

    assert launch.CANNOT_CONFINE == result.returncode
    assert 1 == len(result.stderr.splitlines())
    assert result.stderr.startswith("sandbox: unusable ruleset")
    assert not marker.exists()


@pytest.mark.skipif(launch.abi_version() < 1, reason="needs Landlock")
def test_the_launcher_confines_any_command_line(tmp_path: Path) -> None:
    """The launcher is not shell-specific: a program started directly is confined too."""
    allowed, denied = tmp_path / "allowed", tmp_path / "denied"
    allowed.mkdir()
    denied.mkdir()
    (denied / "f").write_text("no")
    reach = Reach(
        roots=(_root(allowed, FileOperation.WRITE),), protected=(), home=None, tmp_dir=str(allowed)
    )
    words = build_ruleset(reach, network=False).arguments()
    result = subprocess.run(
        [sys.executable, "-I", "-S", LAUNCHER, *words, "--", "/bin/cat", str(denied / "f")],
        capture_output=True,
        text=True,
        check=False,
    )

    assert 1 == result.returncode
    assert "Permission denied" in result.stderr
