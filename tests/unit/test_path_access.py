"""The pure path access decision, relative base selection and approval grant coverage."""

from __future__ import annotations

import pytest

from domain.authorization.approvals import MAX_GRANT_KEY, covering_grant, grant_key
from domain.authorization.facts import LinkFact, PathFacts, canonical, is_within
from domain.authorization.path_access import PathAllowed, PathDenied, decide_path
from domain.authorization.relative_base import BaseCandidate, join_base, select_base
from domain.authorization.roots import (
    ALL_OPERATIONS,
    READ_ONLY,
    ProtectedPaths,
    RootKind,
    TrustedRoot,
    roots_for,
)
from domain.values.audience import Audience
from domain.values.authorization import ApprovalGrant, DenialCategory, FileOperation

ROOT = TrustedRoot(path="/work", real="/work", kind=RootKind.CONFIGURED, operations=ALL_OPERATIONS)
DOCS = TrustedRoot(path="/docs", real="/docs", kind=RootKind.CONFIGURED, operations=READ_ONLY)
LINKED = TrustedRoot(
    path="/home/me/proj", real="/data/proj", kind=RootKind.CONFIGURED, operations=ALL_OPERATIONS
)
PROTECTED = ProtectedPaths(
    files=frozenset({"/home/me/.ledgerclaw/ledgerclaw.db"}),
    trees=frozenset({"/home/me/.ledgerclaw/keys"}),
    identities=frozenset({"1:99"}),
)
READ, WRITE = FileOperation.READ, FileOperation.WRITE


def facts(
    path: str, real: str | None = None, *links: LinkFact, identity: str | None = None
) -> PathFacts:
    """Facts for a path whose real location is `real` (itself by default)."""
    return PathFacts(
        canonical=path, real=path if real is None else real, links=links, identity=identity
    )


def decide(found: PathFacts, operation: FileOperation = READ) -> PathAllowed | PathDenied:
    """Decide against the three test roots."""
    return decide_path(found, operation, [ROOT, DOCS, LINKED], PROTECTED)


def test_a_path_under_a_root_that_grants_the_operation_is_allowed() -> None:
    """Allowed, naming the root that granted it and the real location checked."""
    decision = decide(facts("/work/a/b.txt"), WRITE)
    assert isinstance(decision, PathAllowed)
    assert (ROOT, "/work/a/b.txt") == (decision.root, decision.real)


@pytest.mark.parametrize(
    ("found", "operation", "category"),
    [
        (facts("/etc/passwd"), READ, DenialCategory.OUTSIDE_ROOTS),
        (facts("/workshop/x"), READ, DenialCategory.OUTSIDE_ROOTS),
        (facts("/docs/a.md"), WRITE, DenialCategory.OUTSIDE_ROOTS),
        (
            facts("/work/l/x", "/etc/x", LinkFact(at="/work/l", resolves_to="/etc")),
            READ,
            DenialCategory.LINK_BOUNDARY,
        ),
        (
            facts("/work/loop", None, LinkFact(at="/work/loop", resolves_to=None)),
            READ,
            DenialCategory.LINK_BOUNDARY,
        ),
        (
            facts("/work/x", None).model_copy(update={"real": None}),
            READ,
            DenialCategory.LINK_BOUNDARY,
        ),
        (facts("/home/me/.ledgerclaw/ledgerclaw.db"), READ, DenialCategory.PROTECTED_PATH),
        (facts("/home/me/.ledgerclaw/keys/id"), READ, DenialCategory.PROTECTED_PATH),
        (
            facts("/work/db", "/home/me/.ledgerclaw/ledgerclaw.db"),
            READ,
            DenialCategory.PROTECTED_PATH,
        ),
        (facts("/work/hardlink", identity="1:99"), READ, DenialCategory.PROTECTED_PATH),
    ],
    ids=[
        "outside",
        "sibling-prefix",
        "read-only-root",
        "link-leaves-root",
        "link-loop",
        "unresolvable",
        "database",
        "key-store",
        "link-to-database",
        "hard-link-to-database",
    ],
)
def test_denials_carry_their_category(
    found: PathFacts, operation: FileOperation, category: DenialCategory
) -> None:
    """Each way out of the roots is denied with its own category and a detail."""
    decision = decide(found, operation)
    assert isinstance(decision, PathDenied)
    assert category == decision.category
    assert decision.detail


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        (
            facts("/home/me/.ledgerclaw/ledgerclaw.db"),
            "/home/me/.ledgerclaw/ledgerclaw.db is protected",
        ),
        (
            facts("/home/me/.ledgerclaw/keys/id"),
            "/home/me/.ledgerclaw/keys/id is protected: it is inside /home/me/.ledgerclaw/keys",
        ),
        (
            facts("/work/db", "/home/me/.ledgerclaw/ledgerclaw.db"),
            "/work/db is protected: it leads to /home/me/.ledgerclaw/ledgerclaw.db",
        ),
        (
            facts("/work/k", "/home/me/.ledgerclaw/keys/id"),
            (
                "/work/k is protected: it leads to /home/me/.ledgerclaw/keys/id,"
                " inside /home/me/.ledgerclaw/keys"
            ),
        ),
        (
            facts("/work/hardlink", identity="1:99"),
            "/work/hardlink is protected: it is the same file as a protected file (a hard link)",
        ),
    ],
    ids=["the-file-itself", "inside-a-tree", "link-to-a-file", "link-into-a-tree", "hard-link"],
)
def test_a_protected_path_says_once_how_it_is_protected(found: PathFacts, expected: str) -> None:
    """The path is named once; only a link, a tree or a hard link adds how it is reached."""
    decision = decide(found)
    assert isinstance(decision, PathDenied)
    assert expected == decision.detail


def test_a_read_only_root_names_itself_in_the_denial() -> None:
    """A write under a read-only root says which root refused it."""
    decision = decide(facts("/docs/a.md"), WRITE)
    assert isinstance(decision, PathDenied)
    assert "configured root /docs, which does not allow write" in decision.detail


def test_a_root_reached_through_a_link_works_both_ways() -> None:
    """Paths through the root's link and through its real location are both allowed."""
    through = facts(
        "/home/me/proj/a", "/data/proj/a", LinkFact(at="/home/me/proj", resolves_to="/data/proj")
    )
    assert decide(through).allowed
    assert decide(facts("/data/proj/a")).allowed


def test_a_link_that_leaves_and_returns_is_still_denied() -> None:
    """A component that resolved outside the root denies the path even if it ends inside."""
    found = facts(
        "/work/out/back/x",
        "/work/a/x",
        LinkFact(at="/work/out", resolves_to="/elsewhere/o"),
        LinkFact(at="/elsewhere/o/back", resolves_to="/work/a"),
    )
    decision = decide(found)
    assert isinstance(decision, PathDenied)
    assert DenialCategory.LINK_BOUNDARY == decision.category


def test_a_link_inside_the_root_to_inside_the_root_is_allowed() -> None:
    """Links are fine while they stay within the root."""
    found = facts("/work/l/x", "/work/a/x", LinkFact(at="/work/l", resolves_to="/work/a"))
    assert decide(found).allowed


def test_roots_are_given_per_audience() -> None:
    """A root configured for personal sessions is not a public session's root."""
    personal_only = ROOT.model_copy(update={"audiences": frozenset({Audience.PERSONAL})})
    assert () == roots_for(Audience.PUBLIC, [personal_only])
    assert (personal_only,) == roots_for(Audience.PERSONAL, [personal_only])


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("/a/./b/../c", "/a/c"), ("//a//b/", "/a/b"), ("/..", "/"), ("/a/b/..", "/a")],
)
def test_canonical_form_has_no_dot_or_empty_segments(raw: str, expected: str) -> None:
    """Lexical normalization of absolute paths."""
    assert expected == canonical(raw)


def test_within_compares_whole_segments() -> None:
    """`/work-other` is not within `/work`; everything is within `/`."""
    assert (True, False, True) == (
        is_within("/work/a", "/work"),
        is_within("/work-other", "/work"),
        is_within("/x", "/"),
    )


def test_the_project_is_the_first_base_then_the_workspace() -> None:
    """An available project wins; an unavailable one falls back; none gives no base."""
    project = BaseCandidate(path="/work/p", available=True)
    gone = BaseCandidate(path="/work/p", available=False)
    workspace = BaseCandidate(path="/s/workspace", available=True)
    assert "/work/p" == select_base(project, workspace)
    assert "/s/workspace" == select_base(gone, workspace)
    assert select_base(gone, BaseCandidate(path=None, available=False)) is None
    assert ("/x", "/b/x", None) == (
        join_base("/x", None),
        join_base("x", "/b"),
        join_base("x", None),
    )


@pytest.mark.parametrize(
    ("approved", "other"),
    [
        ("git status (in .)", "git push (in .)"),
        ("rm 'old file.txt' (in .)", "rm old file.txt (in .)"),
        ("printf '' > scratch.txt (in .)", "printf '' > main.py (in .)"),
        ("make (in a)", "make (in b)"),
    ],
)
def test_a_shell_grant_key_is_the_exact_command(approved: str, other: str) -> None:
    """A session approval covers exactly the approved text and directory, nothing near it."""
    key = grant_key("shell_execute", approved)
    grants = [ApprovalGrant(key=key)]
    assert covering_grant(grants, key, []) is not None
    assert covering_grant(grants, grant_key("shell_execute", other), []) is None
    assert covering_grant(grants, "", []) is None


def test_a_grant_key_of_exactly_the_bound_is_kept_and_a_longer_one_never_granted() -> None:
    """At `MAX_GRANT_KEY` characters a key is whole; one more and no grant can cover it."""
    prefix = "shell_execute: "
    exact = grant_key("shell_execute", "x" * (MAX_GRANT_KEY - len(prefix)))
    assert MAX_GRANT_KEY == len(exact)
    longer = grant_key("shell_execute", "x" * (MAX_GRANT_KEY - len(prefix) + 1))
    other = grant_key("shell_execute", "y" * (MAX_GRANT_KEY - len(prefix) + 1))
    assert ("", "") == (longer, other)
    assert covering_grant([ApprovalGrant(key=exact)], exact, []) is not None
    assert covering_grant([ApprovalGrant(key=exact)], longer, []) is None


def test_a_grant_later_in_the_list_still_covers() -> None:
    """Grants for other keys before the matching one are passed over, not an end."""
    grants = [ApprovalGrant(key="read_file"), ApprovalGrant(key="write_file")]
    assert grants[1] == covering_grant(grants, "write_file", [])


def test_a_directory_grant_covers_only_calls_wholly_inside_it() -> None:
    """Every target must lie under the granted directory, and there must be one."""
    grants = [ApprovalGrant(key="write_file", directory="/work/docs")]
    assert covering_grant(grants, "write_file", ["/work/docs/a.md"]) is not None
    assert covering_grant(grants, "write_file", ["/work/docs/a.md", "/work/b"]) is None
    assert covering_grant(grants, "write_file", []) is None


OUTER = TrustedRoot(path="/work", real="/work", kind=RootKind.CONFIGURED, operations=READ_ONLY)
INNER = TrustedRoot(
    path="/work/sub", real="/work/sub", kind=RootKind.PROJECT, operations=ALL_OPERATIONS
)


@pytest.mark.parametrize("order", [[OUTER, INNER], [INNER, OUTER]], ids=["outer-first", "inner"])
def test_the_innermost_of_nested_roots_grants(order: list[TrustedRoot]) -> None:
    """Of nested roots that both allow the operation, the most specific one is named."""
    decision = decide_path(facts("/work/sub/a.txt"), READ, order, PROTECTED)
    assert isinstance(decision, PathAllowed)
    assert INNER == decision.root


def test_an_outer_root_grants_where_the_inner_one_does_not() -> None:
    """Roots add up: what the inner root does not allow, an enclosing root still may."""
    wide = OUTER.model_copy(update={"operations": ALL_OPERATIONS})
    narrow = INNER.model_copy(update={"operations": READ_ONLY})
    decision = decide_path(facts("/work/sub/a.txt"), WRITE, [narrow, wide], PROTECTED)
    assert isinstance(decision, PathAllowed)
    assert wide == decision.root


def test_an_outer_root_grants_a_link_that_leaves_only_the_inner_one() -> None:
    """A link from the inner root into the outer one: the inner refuses it, the outer allows it."""
    found = facts(
        "/work/sub/l/x", "/work/other/x", LinkFact(at="/work/sub/l", resolves_to="/work/other")
    )
    decision = decide_path(found, READ, [INNER, OUTER], PROTECTED)
    assert isinstance(decision, PathAllowed)
    assert OUTER == decision.root
    alone = decide_path(found, READ, [INNER], PROTECTED)
    assert isinstance(alone, PathDenied)
    assert "/work/sub/l is a link that leaves" in alone.detail


def test_a_link_inside_a_root_that_is_itself_a_link_must_stay_in_its_real_location() -> None:
    """Under a linked root, an inner link to the real tree is allowed, one out of it is not."""
    via_root = LinkFact(at="/home/me/proj", resolves_to="/data/proj")
    staying = facts(
        "/home/me/proj/l/x",
        "/data/proj/a/x",
        via_root,
        LinkFact(at="/data/proj/l", resolves_to="/data/proj/a"),
    )
    leaving = facts(
        "/home/me/proj/l/x",
        "/data/other/x",
        via_root,
        LinkFact(at="/data/proj/l", resolves_to="/data/other"),
    )
    lexical = facts(
        "/home/me/proj/l/x",
        "/data/other/x",
        LinkFact(at="/home/me/proj/l", resolves_to="/data/other"),
    )
    assert decide(staying).allowed
    for found in (leaving, lexical):
        decision = decide(found)
        assert isinstance(decision, PathDenied)
        assert DenialCategory.LINK_BOUNDARY == decision.category
        assert "is a link that leaves configured root /home/me/proj" in decision.detail


def test_a_link_met_outside_the_root_denies_even_when_it_leads_back_in() -> None:
    """Facts that pass a link outside the root are refused, wherever that link points."""
    found = facts("/work/x", "/work/x", LinkFact(at="/mnt/l", resolves_to="/work"))
    decision = decide(found)
    assert isinstance(decision, PathDenied)
    assert "/work/x passes through /mnt/l, outside configured root /work" == decision.detail


def test_a_path_whose_real_location_is_outside_its_root_is_denied() -> None:
    """Without any link recorded, a real location outside the root still denies the path."""
    decision = decide(facts("/work/x", "/elsewhere/x"))
    assert isinstance(decision, PathDenied)
    assert (
        DenialCategory.LINK_BOUNDARY,
        "/work/x really is /elsewhere/x, outside configured root /work",
    ) == (
        decision.category,
        decision.detail,
    )


def test_a_hard_link_to_a_protected_file_names_why() -> None:
    """A file with the identity of a protected file is denied as the same file."""
    decision = decide(facts("/work/copy", identity="1:99"))
    assert isinstance(decision, PathDenied)
    assert "/work/copy is protected: it is the same file as a protected file (a hard link)" == (
        decision.detail
    )
