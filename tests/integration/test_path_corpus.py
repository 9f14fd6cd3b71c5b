"""A path-escape corpus against the real filesystem: each case and its exact decision.

The fixture tree lives in `tmp_path` (T):

```
T/R/                      the trusted root (every operation)
  a/f.txt  a/b/c.txt  ....  with space.txt  .hidden  café.txt (NFC)  line<newline>break.txt
  a/link_to_O -> ../../O      link_to_O -> T/O      a/b/final_link -> T/O/secret
  up -> ..   inner -> a/b   inner_abs -> T/R/a/b   chain1 -> chain2 -> T/O   c1 -> c2 -> a/b
  out -> T/O/back (and T/O/back -> T/R/a)   self -> self   loop_a <-> loop_b
  dangling_in -> a/missing   dangling_out -> T/O/missing   dangling_up -> missing/../link_to_O
  db_link -> home/ledgerclaw.db   db_hard (a hard link to it)   keys_link -> home/keys
  key_hard (a hard link to home/keys/id)
  home/ = H, the ledgerclaw home: ledgerclaw.db(-wal, -shm), secrets.toml, config.toml,
          daemon.pid, daemon.lock, keys/id, credentials/token
T/O/secret                outside every root
T/R-other/x               a sibling whose name starts with the root's name
T/ro/                     a second root that grants only READ
T/Rlink -> T/R            the root spelled through a link
```

Because the root holds the home, protection (not the roots) is what denies the home's files.
"""

from __future__ import annotations

import os
import shutil
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from adapters.fs.envelope import Envelope
from adapters.fs.facts import expand_user, gather_facts, real_directory
from adapters.home import Home
from adapters.pipeline.resolution import (
    PathScope,
    Resolution,
    build_scope,
    resolve_targets,
    run_roots,
)
from adapters.settings.tools import RootSetting
from adapters.tools.contract import PathTarget
from adapters.wiring.tools import protected_paths
from domain.authorization.facts import canonical
from domain.authorization.path_access import (
    PathAccessDecision,
    PathAllowed,
    PathDenied,
    decide_path,
)
from domain.authorization.relative_base import join_base
from domain.authorization.roots import (
    ALL_OPERATIONS,
    READ_ONLY,
    ProtectedPaths,
    RootKind,
    TrustedRoot,
)
from domain.session.events import AttemptDenied, ToolReceiptRecorded
from domain.values.attempts import AttemptEnd
from domain.values.audience import Audience
from domain.values.authorization import DenialCategory, FileOperation
from domain.values.receipts import OutcomeCategory
from tests.pipeline import Pipeline, make_pipeline

ALLOWED = None
"""The expected decision of a case that is allowed."""
OUTSIDE = DenialCategory.OUTSIDE_ROOTS
LINK = DenialCategory.LINK_BOUNDARY
PROTECTED = DenialCategory.PROTECTED_PATH
INVALID = DenialCategory.INVALID_INPUT
READ, WRITE = FileOperation.READ, FileOperation.WRITE
ATTACH, DECLARE = FileOperation.ATTACH, FileOperation.DECLARE_PROJECT_SCOPE

NFC_NAME = unicodedata.normalize("NFC", "café.txt")
NFD_NAME = unicodedata.normalize("NFD", "café.txt")
LONG_NAME = "n" * 255
SECRET = b"the outside secret\n"


@dataclass(frozen=True)
class Tree:
    """The fixture tree's places and the scope that decides paths in it."""

    top: Path
    root: Path
    outside: Path
    home: Path
    read_only: Path
    protected: ProtectedPaths

    def fill(self, template: str) -> str:
        """A case's path with the tree's places filled in."""
        return template.format(
            T=self.top, R=self.root, O=self.outside, H=self.home, RO=self.read_only
        )

    def roots(self, root: Path | None = None) -> tuple[TrustedRoot, ...]:
        """The configured roots: the main root (all operations) and the read-only one."""
        main = canonical(str(root or self.root))
        ro = canonical(str(self.read_only))
        return (
            TrustedRoot(
                path=main,
                real=real_directory(main),
                kind=RootKind.CONFIGURED,
                operations=ALL_OPERATIONS,
            ),
            TrustedRoot(
                path=ro, real=real_directory(ro), kind=RootKind.CONFIGURED, operations=READ_ONLY
            ),
        )

    def scope(self, root: Path | None = None) -> PathScope:
        """Roots, protection and the relative base (the main root, as a declared project)."""
        base = canonical(str(root or self.root))
        return PathScope(roots=self.roots(root), protected=self.protected, base=base)


def _write(path: Path, data: bytes | str = b"x\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


def plant_tree(top: Path) -> Tree:
    """Everything of the fixture tree except the database and its links."""
    root, outside, home = top / "R", top / "O", top / "R" / "home"
    for relative in ("a/f.txt", "a/b/c.txt", "....", "with space.txt", ".hidden"):
        _write(root / relative, f"{relative}\n")
    for name in (NFC_NAME, "line\nbreak.txt", LONG_NAME):
        _write(root / name)
    _write(outside / "secret", SECRET)
    _write(top / "R-other" / "x")
    _write(top / "ro" / "doc.txt")
    (top / "ro" / "dir").mkdir()
    links = {
        "link_to_O": str(outside),
        "a/link_to_O": "../../O",
        "a/b/final_link": str(outside / "secret"),
        "up": "..",
        "inner": "a/b",
        "inner_abs": str(root / "a" / "b"),
        "chain1": "chain2",
        "chain2": str(outside),
        "c1": "c2",
        "c2": "a/b",
        "out": str(outside / "back"),
        "self": "self",
        "loop_a": "loop_b",
        "loop_b": "loop_a",
        "dangling_in": "a/missing",
        "dangling_out": str(outside / "missing"),
        "dangling_up": "missing/../link_to_O",
        "keys_link": "home/keys",
    }
    for at, target in links.items():
        (root / at).symlink_to(target)
    (outside / "back").symlink_to(root / "a")
    (top / "Rlink").symlink_to(root)
    _write(home / "secrets.toml", '[redact]\nvalues = ["hunter2-secret"]\n')
    (home / "secrets.toml").chmod(0o600)  # secrets open to others are refused
    for name in ("config.toml", "daemon.pid", "daemon.lock", "keys/id", "credentials/token"):
        _write(home / name)
    os.link(home / "keys" / "id", root / "key_hard")
    return Tree(
        top=top,
        root=root,
        outside=outside,
        home=home,
        read_only=top / "ro",
        protected=ProtectedPaths(),
    )


def link_database(tree: Tree) -> Tree:
    """Add a symbolic and a hard link to the database; protection is read from the home."""
    database = Home(tree.home).database
    (tree.root / "db_link").symlink_to("home/ledgerclaw.db")
    os.link(database, tree.root / "db_hard")
    return Tree(**{**tree.__dict__, "protected": protected_paths(Home(tree.home))})


def database_tree(top: Path) -> Tree:
    """The fixture tree with a plain database file and its companions in the home."""
    planted = plant_tree(top)
    for name in ("ledgerclaw.db", "ledgerclaw.db-wal", "ledgerclaw.db-shm"):
        _write(planted.home / name, b"journal bytes")
    return link_database(planted)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Tree:
    """One fixture tree shared by the cases that only decide, which change nothing in it."""
    return database_tree(tmp_path_factory.mktemp("corpus"))


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    """A fixture tree of the test's own, for the cases that change it."""
    return database_tree(tmp_path)


def decide(
    tree: Tree, raw: str, operation: FileOperation, root: Path | None = None
) -> PathAccessDecision:
    """The pure pipeline's decision, checked against decide_path and resolve_targets."""
    scope = tree.scope(root)
    absolute = join_base(expand_user(raw), scope.base)
    assert absolute is not None
    decision = scope.decide(absolute, operation)
    if category(decision) is not INVALID:
        facts = gather_facts(absolute)
        assert decision == decide_path(facts, operation, scope.roots, scope.protected)
    resolution = resolve_targets([PathTarget(argument="path", raw=raw, operation=operation)], scope)
    if isinstance(decision, PathAllowed):
        assert [decision.real] == [bound.real for bound in resolution.bound]
    else:
        assert resolution.denied is not None
        assert decision.category == resolution.denied.category
    return decision


def category(decision: PathAccessDecision) -> DenialCategory | None:
    """The decision's denial category, or ALLOWED."""
    return ALLOWED if isinstance(decision, PathAllowed) else decision.category


def allowed_real(decision: PathAccessDecision) -> str:
    """The real location an allowed decision checked."""
    assert isinstance(decision, PathAllowed)
    return decision.real


def denial_detail(decision: PathAccessDecision) -> str:
    """The detail of a denied decision."""
    assert isinstance(decision, PathDenied)
    return decision.detail


# -- the corpus --------------------------------------------------------------------------

# (raw path, expected decision, expected real location or None); relative paths resolve
# against R, placeholders are filled from the tree.
ESCAPES = [
    # `..` in every position
    pytest.param("../x", OUTSIDE, None, id="dotdot-first"),
    pytest.param("a/../../x", OUTSIDE, None, id="dotdot-second"),
    pytest.param("a/b/../../../x", OUTSIDE, None, id="dotdot-third"),
    pytest.param("{R}/./a/../..", OUTSIDE, None, id="dot-then-dotdot-to-parent"),
    pytest.param("{R}/..", OUTSIDE, None, id="dotdot-trailing-absolute"),
    pytest.param("..", OUTSIDE, None, id="dotdot-alone"),
    pytest.param("../R-other/x", OUTSIDE, None, id="dotdot-into-sibling"),
    pytest.param("....", ALLOWED, "{R}/....", id="four-dots-is-a-name"),
    pytest.param("a/..", ALLOWED, "{R}", id="dotdot-back-to-root"),
    pytest.param("a/b/..", ALLOWED, "{R}/a", id="dotdot-trailing-inside"),
    pytest.param(".", ALLOWED, "{R}", id="dot-alone"),
    pytest.param("./a/./f.txt", ALLOWED, "{R}/a/f.txt", id="dots-inside"),
    pytest.param("../R/a/f.txt", ALLOWED, "{R}/a/f.txt", id="dotdot-out-and-in-by-name"),
    # absolute paths and home expansion
    pytest.param("{O}/secret", OUTSIDE, None, id="absolute-outside"),
    pytest.param("/", OUTSIDE, None, id="filesystem-root"),
    pytest.param("/etc/passwd", OUTSIDE, None, id="absolute-system-file"),
    pytest.param("{T}", OUTSIDE, None, id="root-parent"),
    pytest.param("~", OUTSIDE, None, id="tilde"),
    pytest.param("~/x", OUTSIDE, None, id="tilde-slash"),
    pytest.param("~root", OUTSIDE, None, id="tilde-user"),
    pytest.param("~root/x", OUTSIDE, None, id="tilde-user-slash"),
    pytest.param(
        "~no-such-user-ledgerclaw",
        ALLOWED,
        "{R}/~no-such-user-ledgerclaw",
        id="tilde-unknown-user-is-a-name",
    ),
    # links leaving the root, in every component position
    pytest.param("link_to_O/secret", LINK, None, id="link-first-component"),
    pytest.param("a/link_to_O/secret", LINK, None, id="link-middle-relative-target"),
    pytest.param("a/b/final_link", LINK, None, id="link-final-component"),
    pytest.param("link_to_O", LINK, None, id="link-itself-absolute-target"),
    pytest.param("up", LINK, None, id="link-to-dotdot"),
    pytest.param("up/O/secret", LINK, None, id="link-to-dotdot-then-outside"),
    pytest.param("up/R/a/f.txt", LINK, None, id="link-to-dotdot-and-back-by-name"),
    pytest.param("link_to_O/../R/a/f.txt", LINK, None, id="dotdot-after-leaving-link"),
    pytest.param("chain1/secret", LINK, None, id="chain-of-links-to-outside"),
    pytest.param("{R}/a/link_to_O/secret", LINK, None, id="link-middle-absolute-request"),
    pytest.param("out/f.txt", LINK, None, id="link-out-and-back"),
    pytest.param("out", LINK, None, id="link-out-and-back-itself"),
    # links staying inside
    pytest.param("inner/c.txt", ALLOWED, "{R}/a/b/c.txt", id="link-inside-relative"),
    pytest.param("inner_abs/c.txt", ALLOWED, "{R}/a/b/c.txt", id="link-inside-absolute"),
    pytest.param("c1/c.txt", ALLOWED, "{R}/a/b/c.txt", id="chain-inside"),
    pytest.param("inner/../f.txt", ALLOWED, "{R}/a/f.txt", id="dotdot-climbs-from-link-target"),
    # loops and dangling links
    pytest.param("self", LINK, None, id="loop-self"),
    pytest.param("self/x", LINK, None, id="loop-self-then-more"),
    pytest.param("loop_a", LINK, None, id="loop-two-links"),
    pytest.param("loop_b/x", LINK, None, id="loop-two-links-then-more"),
    pytest.param("dangling_in", ALLOWED, "{R}/a/missing", id="dangling-inside"),
    pytest.param("dangling_out", LINK, None, id="dangling-outside"),
    # a missing component, `..`, then a link that leaves the root
    pytest.param(
        "missing/../link_to_O/secret",
        LINK,
        None,
        id="missing-dir-dotdot",
    ),
    pytest.param(
        "a/f.txt/x/../../link_to_O/secret",
        LINK,
        None,
        id="file-as-dir-dotdot",
    ),
    pytest.param(
        "dangling_up/secret",
        LINK,
        None,
        id="dangling-via-missing-dotdot",
    ),
    # hard-to-normalize names
    pytest.param("{R}//a///b", ALLOWED, "{R}/a/b", id="double-slashes"),
    pytest.param("/{R}/a/f.txt", ALLOWED, "{R}/a/f.txt", id="leading-double-slash"),
    pytest.param("a/b/", ALLOWED, "{R}/a/b", id="trailing-slash"),
    pytest.param("with space.txt", ALLOWED, "{R}/with space.txt", id="space-in-name"),
    pytest.param(NFC_NAME, ALLOWED, "{R}/" + NFC_NAME, id="unicode-nfc"),
    pytest.param(NFD_NAME, ALLOWED, "{R}/" + NFD_NAME, id="unicode-nfd-is-another-name"),
    pytest.param("line\nbreak.txt", ALLOWED, "{R}/line\nbreak.txt", id="newline-in-name"),
    pytest.param(".hidden", ALLOWED, "{R}/.hidden", id="hidden-name"),
    pytest.param(LONG_NAME, ALLOWED, "{R}/" + LONG_NAME, id="name-of-255-bytes"),
    pytest.param("{T}/R-other/x", OUTSIDE, None, id="sibling-sharing-root-prefix"),
    pytest.param("{R}-other/x", OUTSIDE, None, id="root-name-plus-suffix"),
]


@pytest.mark.parametrize("operation", [READ, WRITE])
@pytest.mark.parametrize(("raw", "expected", "real"), ESCAPES)
def test_each_corpus_path_has_its_exact_decision(
    corpus: Tree,
    raw: str,
    expected: DenialCategory | None,
    real: str | None,
    operation: FileOperation,
) -> None:
    """A corpus path is allowed or denied with exactly the expected category."""
    decision = decide(corpus, corpus.fill(raw), operation)
    assert expected == category(decision)
    if real is not None:
        assert corpus.fill(real) == allowed_real(decision)


def test_home_expansion_uses_the_home_of_the_process(corpus: Tree) -> None:
    """`~` and `~/x` are decided at the home directory of this process, not under the root."""
    decision = decide(corpus, "~/x", READ)
    assert canonical(str(Path("~/x").expanduser())) == decision.path


def test_unicode_forms_are_different_names(corpus: Tree) -> None:
    """NFC and NFD spellings of one name are two paths; only the one created exists."""
    nfc = gather_facts(f"{corpus.root}/{NFC_NAME}")
    nfd = gather_facts(f"{corpus.root}/{NFD_NAME}")
    assert NFC_NAME != NFD_NAME
    assert (True, False) == (nfc.exists, nfd.exists)
    assert nfc.real != nfd.real


def test_a_denial_names_the_link_that_leaves_the_root(corpus: Tree) -> None:
    """The link boundary detail names the link and where it leads."""
    decision = decide(corpus, "a/link_to_O/secret", READ)
    assert LINK == category(decision)
    assert f"{corpus.root}/a/link_to_O" in denial_detail(decision)
    assert str(corpus.outside) in denial_detail(decision)


# -- a root reached through a link -------------------------------------------------------

THROUGH_LINKED_ROOT = [
    pytest.param("{T}/Rlink/a/f.txt", ALLOWED, "{R}/a/f.txt", id="through-the-root-link"),
    pytest.param("{R}/a/f.txt", ALLOWED, "{R}/a/f.txt", id="real-root-spelled-directly"),
    pytest.param("a/b/c.txt", ALLOWED, "{R}/a/b/c.txt", id="relative-to-the-root-link"),
    pytest.param("{T}/Rlink/link_to_O/secret", LINK, None, id="leaving-link-below-it"),
    pytest.param("{T}/Rlink/../O/secret", OUTSIDE, None, id="dotdot-out-of-it"),
    pytest.param("{T}/Rlink/home/secrets.toml", PROTECTED, None, id="protected-below-it"),
]


@pytest.mark.parametrize(("raw", "expected", "real"), THROUGH_LINKED_ROOT)
def test_a_root_reached_through_a_link_keeps_its_boundary(
    corpus: Tree, raw: str, expected: DenialCategory | None, real: str | None
) -> None:
    """A root configured as a link works through the link and at its real location."""
    decision = decide(corpus, corpus.fill(raw), READ, root=corpus.top / "Rlink")
    assert expected == category(decision)
    if real is not None:
        assert corpus.fill(real) == allowed_real(decision)


# -- protected paths ---------------------------------------------------------------------

PROTECTED_CASES = [
    pytest.param("{H}/ledgerclaw.db", id="database"),
    pytest.param("{H}/ledgerclaw.db-wal", id="database-wal"),
    pytest.param("{H}/ledgerclaw.db-shm", id="database-shm"),
    pytest.param("{H}/ledgerclaw.db-journal", id="database-rollback-journal-not-yet-there"),
    pytest.param("{H}/secrets.toml", id="secrets"),
    pytest.param("{H}/config.toml", id="config"),
    pytest.param("{H}/daemon.pid", id="daemon-pid"),
    pytest.param("{H}/daemon.lock", id="daemon-lock"),
    pytest.param("{H}/keys", id="keys-directory"),
    pytest.param("{H}/keys/id", id="key-file"),
    pytest.param("{H}/keys/new/deeper", id="new-path-under-keys"),
    pytest.param("{H}/credentials/token", id="credentials"),
    pytest.param("{H}/backups/ledgerclaw-20261201T000000Z.db", id="backup-copy"),
    pytest.param("{H}/backups/ledgerclaw.db.replaced-20261201T000000Z", id="replaced-journal"),
    pytest.param("{H}/./keys/../secrets.toml", id="secrets-spelled-with-dots"),
    pytest.param("{R}//home///ledgerclaw.db", id="database-with-double-slashes"),
    pytest.param("home/ledgerclaw.db", id="database-relative"),
    pytest.param("db_link", id="symlink-to-database"),
    pytest.param("db_hard", id="hard-link-to-database"),
    pytest.param("keys_link/id", id="symlink-into-keys"),
    pytest.param("keys_link", id="symlink-to-keys"),
    pytest.param("key_hard", id="hard-link-to-key-file"),
    pytest.param(
        "missing/../keys_link/id",
        id="missing-dotdot-symlink-into-keys",
    ),
]


@pytest.mark.parametrize("operation", list(FileOperation))
@pytest.mark.parametrize("raw", PROTECTED_CASES)
def test_protected_paths_are_denied_for_every_operation(
    corpus: Tree, raw: str, operation: FileOperation
) -> None:
    """The home's control-plane files and secret stores are protected under any root."""
    decision = decide(corpus, corpus.fill(raw), operation)
    assert PROTECTED == category(decision)


def test_the_home_itself_is_not_protected(corpus: Tree) -> None:
    """The home directory and its other files are ordinary paths under the root."""
    assert ALLOWED == category(decide(corpus, "home", READ))
    assert ALLOWED == category(decide(corpus, "home/notes.txt", WRITE))


# -- operations --------------------------------------------------------------------------

OPERATION_CASES = [
    pytest.param("{RO}/doc.txt", READ, ALLOWED, id="read-only-root-reads"),
    pytest.param("{RO}/doc.txt", WRITE, OUTSIDE, id="read-only-root-denies-write"),
    pytest.param("{RO}/new.txt", WRITE, OUTSIDE, id="read-only-root-denies-create"),
    pytest.param("{RO}/doc.txt", ATTACH, OUTSIDE, id="read-only-root-denies-attach"),
    pytest.param("{RO}/dir", DECLARE, OUTSIDE, id="read-only-root-denies-project"),
    pytest.param("a", DECLARE, ALLOWED, id="project-where-granted"),
    pytest.param("a/f.txt", ATTACH, ALLOWED, id="attach-where-granted"),
    pytest.param("{O}", DECLARE, OUTSIDE, id="project-outside"),
    pytest.param("link_to_O", DECLARE, LINK, id="project-through-leaving-link"),
]


@pytest.mark.parametrize(("raw", "operation", "expected"), OPERATION_CASES)
def test_each_root_grants_only_its_operations(
    corpus: Tree, raw: str, operation: FileOperation, expected: DenialCategory | None
) -> None:
    """An operation a root does not grant is outside the roots for that operation."""
    assert expected == category(decide(corpus, corpus.fill(raw), operation))


def test_an_operation_denial_names_the_root_that_holds_the_path(corpus: Tree) -> None:
    """A write under a read-only root says which root holds the path and what it lacks."""
    decision = decide(corpus, corpus.fill("{RO}/doc.txt"), WRITE)
    assert OUTSIDE == category(decision)
    assert f"configured root {corpus.read_only}" in denial_detail(decision)
    assert "does not allow write" in denial_detail(decision)


# -- paths the product cannot represent --------------------------------------------------


def test_a_link_whose_target_is_not_utf8_is_denied_not_raised(tree: Tree) -> None:
    """A link target that is not UTF-8 cannot be recorded as text, so the path is denied."""
    os.symlink(b"\xff\xfe", os.fsencode(tree.root / "bad_target"))  # noqa: PTH211 - Path holds no bytes
    assert INVALID == category(decide(tree, "bad_target/x", READ))


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("a" * 5000, id="longer-than-path-max"),
        pytest.param("x\x00y", id="nul"),
        pytest.param("bad\udcff", id="lone-surrogate"),
    ],
)
def test_a_path_that_is_not_a_canonical_path_is_denied(corpus: Tree, raw: str) -> None:
    """A path with a NUL, a lone surrogate or beyond the length limit is invalid input."""
    assert INVALID == category(decide(corpus, raw, READ))


# -- relative bases ----------------------------------------------------------------------


@dataclass(frozen=True)
class SessionSetup:
    """A session's envelope and the configured root settings."""

    envelope: Envelope
    settings: tuple[RootSetting, ...]
    protected: ProtectedPaths

    def scope(self, project: Path | None) -> PathScope:
        """The scope of a call with `project` declared (or none)."""
        declared = None if project is None else canonical(str(project))
        roots = run_roots(self.envelope, self.settings)
        return build_scope(
            Audience.PERSONAL, roots, self.envelope.workspace, declared, self.protected
        )


@pytest.fixture
def session(tree: Tree) -> SessionSetup:
    """An envelope beside the tree and R configured for every operation."""
    setting = RootSetting(
        path=str(tree.root), operations=tuple(FileOperation), audiences=tuple(Audience)
    )
    return SessionSetup(Envelope(tree.top / "envelope").create(), (setting,), tree.protected)


def _relative(scope: PathScope, raw: str) -> Resolution:
    return resolve_targets([PathTarget(argument="path", raw=raw, operation=READ)], scope)


def test_relative_paths_resolve_against_the_declared_project(
    tree: Tree, session: SessionSetup
) -> None:
    """With a project declared, a relative path is joined to the project directory."""
    scope = session.scope(tree.root / "a")
    [bound] = _relative(scope, "b/c.txt").bound
    assert f"{tree.root}/a/b/c.txt" == bound.real


def test_relative_paths_resolve_against_the_workspace_without_a_project(
    session: SessionSetup,
) -> None:
    """Without a project, a relative path is joined to the session's workspace."""
    [bound] = _relative(session.scope(None), "notes.txt").bound
    assert f"{session.envelope.workspace}/notes.txt" == bound.real


def test_a_missing_project_falls_back_to_the_workspace(tree: Tree, session: SessionSetup) -> None:
    """A declared project that no longer exists is unavailable, so the workspace is used."""
    shutil.rmtree(tree.root / "a")
    [bound] = _relative(session.scope(tree.root / "a"), "notes.txt").bound
    assert f"{session.envelope.workspace}/notes.txt" == bound.real


def test_no_base_at_all_is_a_correction_not_a_denial(session: SessionSetup) -> None:
    """With no project and no workspace there is no base; nothing is decided."""
    shutil.rmtree(session.envelope.workspace)
    resolution = _relative(session.scope(None), "notes.txt")
    assert (True, None, ()) == (resolution.no_base, resolution.denied, resolution.bound)


def test_relative_dotdot_cannot_leave_the_project_into_the_outside(
    tree: Tree, session: SessionSetup
) -> None:
    """A relative path climbing out of the project and every root is outside the roots."""
    denied = _relative(session.scope(tree.root / "a"), "../../O/secret").denied
    assert denied is not None
    assert OUTSIDE == denied.category


def test_a_denied_project_base_is_never_retried_under_the_workspace(
    tree: Tree, session: SessionSetup
) -> None:
    """A project whose ancestor became a link outside is selected, denied, and final."""
    project = tree.root / "p" / "proj"
    project.mkdir(parents=True)
    (tree.outside / "proj").mkdir()
    _write(session.envelope.workspace / "notes.txt")
    shutil.rmtree(tree.root / "p")
    (tree.root / "p").symlink_to(tree.outside)
    resolution = _relative(session.scope(project), "notes.txt")
    assert () == resolution.bound
    assert resolution.denied is not None
    assert LINK == resolution.denied.category


# -- the whole dispatcher ----------------------------------------------------------------


@pytest.fixture
def dispatched(tmp_path: Path) -> Iterator[tuple[Tree, Pipeline]]:
    """The fixture tree with the pipeline's home as H and its real journal as the database."""
    planted = plant_tree(tmp_path)
    pipeline = make_pipeline(
        planted.root,
        roots=[(planted.root, tuple(FileOperation)), (planted.read_only, (READ,))],
    )
    try:
        assert planted.home == pipeline.home.root
        linked = link_database(planted)
        yield linked, pipeline
    finally:
        pipeline.close()


def _snapshot(directory: Path) -> dict[str, bytes | str]:
    """Every entry below `directory`, links by target and files by content, never followed."""
    entries: dict[str, bytes | str] = {}
    for path in sorted(directory.rglob("*")):
        relative = str(path.relative_to(directory))
        if path.is_symlink():
            entries[relative] = f"-> {path.readlink()}"
        elif path.is_file():
            entries[relative] = path.read_bytes()
        else:
            entries[relative] = "dir"
    return entries


DISPATCHED = [
    pytest.param("read_file", "{R}/../O/secret", OUTSIDE, id="read-dotdot-outside"),
    pytest.param("read_file", "{O}/secret", OUTSIDE, id="read-absolute-outside"),
    pytest.param("read_file", "~/x", OUTSIDE, id="read-tilde"),
    pytest.param("read_file", "{R}/link_to_O/secret", LINK, id="read-through-leaving-link"),
    pytest.param("read_file", "{R}/a/b/final_link", LINK, id="read-final-leaving-link"),
    pytest.param("read_file", "{R}/chain1/secret", LINK, id="read-through-chain"),
    pytest.param("read_file", "{R}/self", LINK, id="read-loop"),
    pytest.param("read_file", "{H}/ledgerclaw.db", PROTECTED, id="read-database"),
    pytest.param("read_file", "{H}/secrets.toml", PROTECTED, id="read-secrets"),
    pytest.param("read_file", "{R}/db_hard", PROTECTED, id="read-hard-link-to-database"),
    pytest.param("read_file", "{R}/db_link", PROTECTED, id="read-symlink-to-database"),
    pytest.param(
        "read_file",
        "{R}/key_hard",
        PROTECTED,
        id="read-hard-link-to-key",
    ),
    pytest.param("read_file", "{RO}/doc.txt", ALLOWED, id="read-under-read-only-root"),
    pytest.param("read_file", "{R}/inner/c.txt", ALLOWED, id="read-through-inner-link"),
    pytest.param("read_file", "{R}/out/f.txt", LINK, id="read-out-and-back"),
    pytest.param(
        "read_file",
        "{R}/missing/../link_to_O/secret",
        LINK,
        id="read-missing-dotdot-leaving-link",
    ),
    pytest.param(
        "read_file",
        "{R}/missing/../keys_link/id",
        PROTECTED,
        id="read-key-via-missing-dotdot",
    ),
    pytest.param("read_file", "{R}/a/x\x00y", INVALID, id="read-nul-in-path"),
    pytest.param("read_file", "{R}/" + "n/" * 2100, INVALID, id="read-longer-than-path-max"),
    pytest.param("list_directory", "{R}/up", LINK, id="list-link-to-dotdot"),
    pytest.param("list_directory", "{R}-other", OUTSIDE, id="list-sibling-sharing-prefix"),
    pytest.param("list_directory", "{H}/keys", PROTECTED, id="list-keys"),
    pytest.param("list_directory", "{R}/a", ALLOWED, id="list-inside"),
    pytest.param("write_file", "{O}/secret", OUTSIDE, id="write-absolute-outside"),
    pytest.param("write_file", "{R}/a/b/../../../O/secret", OUTSIDE, id="write-dotdot-outside"),
    pytest.param("write_file", "{R}/link_to_O/secret", LINK, id="write-through-leaving-link"),
    pytest.param("write_file", "{R}/a/link_to_O/new.txt", LINK, id="write-new-through-link"),
    pytest.param("write_file", "{R}/a/b/final_link", LINK, id="write-final-leaving-link"),
    pytest.param("write_file", "{R}/dangling_out", LINK, id="write-dangling-outside"),
    pytest.param("write_file", "{H}/config.toml", PROTECTED, id="write-config"),
    pytest.param("write_file", "{H}/keys/id", PROTECTED, id="write-key"),
    pytest.param("write_file", "{H}/daemon.pid", PROTECTED, id="write-daemon-pid"),
    pytest.param("write_file", "{RO}/doc.txt", OUTSIDE, id="write-under-read-only-root"),
    pytest.param("write_file", "{R}/a/new.txt", ALLOWED, id="write-inside"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("tool", "raw", "expected"), DISPATCHED)
async def test_the_dispatcher_journals_each_corpus_decision(
    dispatched: tuple[Tree, Pipeline], tool: str, raw: str, expected: DenialCategory | None
) -> None:
    """A denied call leaves a denial with its category and no receipt; nothing outside moves."""
    tree, pipeline = dispatched
    protected_before = _snapshot(tree.home / "keys"), (tree.home / "config.toml").read_bytes()
    outside_before = _snapshot(tree.outside)
    arguments = {"path": tree.fill(raw)}
    if tool == "write_file":
        arguments["content"] = "written by the corpus\n"
    result = await pipeline.call(tool, **arguments)
    mine = [e for e in pipeline.events() if getattr(e, "attempt_id", None) == result.attempt_id]
    denials = [e.category for e in mine if isinstance(e, AttemptDenied)]
    receipts = [e.outcome for e in mine if isinstance(e, ToolReceiptRecorded)]
    if expected is ALLOWED:
        assert (AttemptEnd.RECEIPT, OutcomeCategory.SUCCESS) == (result.end, result.outcome)
        assert ([], [OutcomeCategory.SUCCESS]) == (denials, receipts)
    else:
        assert (AttemptEnd.DENIED, expected) == (result.end, result.denial)
        assert ([expected], []) == (denials, receipts)
    assert outside_before == _snapshot(tree.outside)
    assert protected_before == (
        _snapshot(tree.home / "keys"),
        (tree.home / "config.toml").read_bytes(),
    )


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param("../O/secret", OUTSIDE, id="dotdot"),
        pytest.param("a/link_to_O/secret", LINK, id="leaving-link"),
        pytest.param("home/secrets.toml", PROTECTED, id="protected"),
        pytest.param("a/f.txt", ALLOWED, id="inside"),
    ],
)
async def test_relative_paths_in_the_dispatcher_resolve_against_the_project(
    dispatched: tuple[Tree, Pipeline], raw: str, expected: DenialCategory | None
) -> None:
    """After declaring R as the project, relative reads are decided as paths below R."""
    tree, pipeline = dispatched
    declared = await pipeline.call("set_working_directory", path=str(tree.root))
    assert OutcomeCategory.SUCCESS == declared.outcome
    result = await pipeline.call("read_file", path=raw)
    assert expected == result.denial
    if expected is ALLOWED:
        assert OutcomeCategory.SUCCESS == result.outcome
        assert "a/f.txt" in result.text


@pytest.mark.anyio
async def test_the_dispatcher_never_retries_a_denied_project_under_the_workspace(
    dispatched: tuple[Tree, Pipeline],
) -> None:
    """A project whose ancestor became a link outside denies relative paths at the link."""
    tree, pipeline = dispatched
    project = tree.root / "p" / "proj"
    project.mkdir(parents=True)
    declared = await pipeline.call("set_working_directory", path=str(project))
    assert OutcomeCategory.SUCCESS == declared.outcome
    (tree.outside / "proj").mkdir()
    _write(tree.outside / "proj" / "notes.txt", SECRET)
    _write(pipeline.workspace / "notes.txt")
    shutil.rmtree(tree.root / "p")
    (tree.root / "p").symlink_to(tree.outside)
    result = await pipeline.call("read_file", path="notes.txt")
    assert (AttemptEnd.DENIED, LINK) == (result.end, result.denial)
