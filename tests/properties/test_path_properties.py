"""Properties of the path access decision over generated trees and links; properties.

Each example draws a small layout (directories and files inside a root and in an outside
area beside it, a ledgerclaw home inside the root, and up to six symbolic links anywhere,
pointing inside, outside, up with `..`, at nothing, or at each other), builds it in a fresh
temporary directory, and draws request paths from the names in it plus `..`, `.` and names
that do not exist. The product's decision is compared with `os.path.realpath`, which
resolves the unnormalized request the way the kernel walks it.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from adapters.fs.facts import gather_facts, real_directory
from adapters.home import Home
from adapters.wiring.tools import protected_paths
from domain.authorization.facts import canonical
from domain.authorization.path_access import PathAllowed, PathDenied, decide_path
from domain.authorization.roots import (
    ALL_OPERATIONS,
    READ_ONLY,
    ProtectedPaths,
    RootKind,
    TrustedRoot,
)
from domain.values.authorization import DenialCategory, FileOperation

DIR_NAMES = ("a", "b", "c")
FILE_NAMES = ("f", "g")
HOME = "root/home"
HOME_FILES = (f"{HOME}/ledgerclaw.db", f"{HOME}/secrets.toml", f"{HOME}/keys/id")
FIXED_DIRS = ("root", "outside", HOME, f"{HOME}/keys")
PATH_DENIALS = frozenset(
    {
        DenialCategory.OUTSIDE_ROOTS,
        DenialCategory.LINK_BOUNDARY,
        DenialCategory.PROTECTED_PATH,
    }
)


@dataclass(frozen=True)
class Layout:
    """A tree to build, relative to a fresh top directory.

    `links` pairs where a link is with its target as written; `{top}` in a target stands
    for the top directory, so absolute targets survive the move to a fresh directory.
    """

    dirs: tuple[str, ...]
    files: tuple[str, ...]
    links: tuple[tuple[str, str], ...]
    root_via_link: bool
    read_only: bool


@dataclass(frozen=True)
class Scenario:
    """A layout and the requests (paths relative to the top, with operations) made in it."""

    layout: Layout
    requests: tuple[tuple[str, FileOperation], ...]


@st.composite
def layouts(draw: st.DrawFn) -> Layout:
    """A small tree: up to 8 directories, 8 files and 6 links, inside and outside the root."""
    dirs = list(FIXED_DIRS)
    for _ in range(draw(st.integers(0, 8))):
        path = f"{draw(st.sampled_from(dirs))}/{draw(st.sampled_from(DIR_NAMES))}"
        if path not in dirs:
            dirs.append(path)
    files = list(HOME_FILES)
    for _ in range(draw(st.integers(0, 8))):
        path = f"{draw(st.sampled_from(dirs))}/{draw(st.sampled_from(FILE_NAMES))}"
        if path not in files:
            files.append(path)
    places = [f"{draw(st.sampled_from(dirs))}/l{i}" for i in range(draw(st.integers(0, 6)))]
    nodes = [*dirs, *files, *places]
    names = [*DIR_NAMES, *FILE_NAMES, *(f"l{i}" for i in range(len(places)))]
    links = tuple((place, draw(link_targets(place, nodes, places, names))) for place in places)
    return Layout(
        dirs=tuple(dirs),
        files=tuple(files),
        links=links,
        root_via_link=draw(st.booleans()),
        read_only=draw(st.sampled_from([False, False, False, True])),
    )


def link_targets(
    place: str, nodes: list[str], places: list[str], names: list[str]
) -> st.SearchStrategy[str]:
    """Targets for a link at `place`: absolute, relative with `..`, a walk, dangling, a link."""
    here = posixpath.dirname(place)
    node = st.sampled_from(nodes)
    return st.one_of(
        node.map(lambda n: "{top}/" + n),
        node.map(lambda n: os.path.relpath(n, here)),
        st.lists(st.sampled_from(["..", ".", *names]), min_size=1, max_size=4).map("/".join),
        node.map(lambda n: os.path.relpath(n, here) + "/missing"),
        node.map(lambda n: "{top}/" + n + "/missing"),
        st.sampled_from(places).map(lambda p: os.path.relpath(p, here)),
    )


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """A layout and up to 8 request paths in it."""
    layout = draw(layouts())
    # Link names and `..` come up more often than the rest: they are where escapes hide.
    link_names = [posixpath.basename(place) for place, _ in layout.links]
    names = [
        *DIR_NAMES,
        *FILE_NAMES,
        *link_names * 3,
        *("..", "..", ".", "missing", "missing"),
        *("home", "keys", "id", "ledgerclaw.db", "root", "outside"),
    ]
    starts = ["root", "root", "root", "root", "root/home", "outside", ""]
    if layout.root_via_link:
        starts.append("rootlink")
    # `name/..` is where the kernel and a lexical reading part: after a link it climbs from
    # where the link leads, after a missing name it climbs back to where it started.
    component = st.one_of(
        st.sampled_from(names), st.sampled_from(names).map(lambda name: name + "/..")
    )
    request = st.tuples(
        st.sampled_from(starts),
        st.lists(component, max_size=6),
        st.sampled_from(["/", "//"]),
        st.booleans(),
    ).map(lambda r: r[2].join([r[0], *r[1]]) + ("/" if r[3] else ""))
    operation = st.sampled_from(list(FileOperation))
    requests = draw(st.lists(st.tuples(request, operation), min_size=1, max_size=8))
    return Scenario(layout=layout, requests=tuple(requests))


@dataclass(frozen=True)
class World:
    """A built layout: its top directory, the trusted root and the protected paths."""

    top: str
    root: TrustedRoot
    protected: ProtectedPaths
    real_root: str
    """Where the root really is, found by `os.path.realpath`, not by the product."""
    protected_files: frozenset[str]
    protected_trees: frozenset[str]

    def absolute(self, relative: str) -> str:
        """A request path as given to the product: the top joined to it, unnormalized."""
        return f"{self.top}/{relative}"


@contextmanager
def built(layout: Layout) -> Iterator[World]:
    """Build `layout` in a fresh temporary directory and remove it afterwards."""
    top = tempfile.mkdtemp(prefix="ledgerclaw-paths-")
    try:
        for directory in layout.dirs:
            Path(top, directory).mkdir(parents=True, exist_ok=True)
        for file in layout.files:
            Path(f"{top}/{file}").write_text(file)
        for place, target in layout.links:
            Path(top, place).symlink_to(target.replace("{top}", top))
        root_path = f"{top}/root"
        if layout.root_via_link:
            Path(top, "rootlink").symlink_to("root")
            root_path = f"{top}/rootlink"
        home = Home(Path(top) / HOME)
        root = TrustedRoot(
            path=canonical(root_path),
            real=real_directory(canonical(root_path)),
            kind=RootKind.CONFIGURED,
            operations=READ_ONLY if layout.read_only else ALL_OPERATIONS,
        )
        yield World(
            top=top,
            root=root,
            protected=protected_paths(home),
            real_root=os.path.realpath(f"{top}/root"),
            protected_files=frozenset(os.path.realpath(p) for p in home.protected_files),
            protected_trees=frozenset(os.path.realpath(p) for p in home.protected_trees),
        )
    finally:
        shutil.rmtree(top)


def within(path: str, directory: str) -> bool:
    """Whether `path` is `directory` or below it, by whole segments."""
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def leaves_root(raw: str, real_root: str) -> bool:
    """Whether the kernel's walk of `raw` ends or crosses a link leading outside the root.

    Worked out with os.path.realpath alone, prefix by prefix of the unnormalized path.
    """
    prefix = ""
    for part in raw.split("/"):
        if part not in ("", ".", ".."):
            step = posixpath.join(os.path.realpath(prefix or "/"), part)
            leads = os.path.realpath(step)
            if Path(step).is_symlink() and within(step, real_root) and not within(leads, real_root):
                return True
        prefix = f"{prefix}/{part}"
    return not within(os.path.realpath(raw), real_root)


def decide(world: World, raw: str, operation: FileOperation) -> PathAllowed | PathDenied:
    """The product's decision for one request, from fresh filesystem facts."""
    return decide_path(gather_facts(raw), operation, [world.root], world.protected)


@given(scenarios())
def test_an_allowed_path_really_lies_under_the_root(scenario: Scenario) -> None:
    """An allowed path's kernel resolution is the checked location, under the real root."""
    with built(scenario.layout) as world:
        for relative, operation in scenario.requests:
            raw = world.absolute(relative)
            decision = decide(world, raw, operation)
            if isinstance(decision, PathAllowed):
                assert os.path.realpath(raw) == decision.real
                assert decision.real == os.path.realpath(decision.real)
                assert within(decision.real, world.real_root)
                assert operation in decision.root.operations


@given(scenarios())
def test_a_path_whose_resolution_leaves_the_root_is_never_allowed(scenario: Scenario) -> None:
    """A path that ends outside the root, or crosses a link leading out of it, is denied."""
    with built(scenario.layout) as world:
        for relative, operation in scenario.requests:
            raw = world.absolute(relative)
            if leaves_root(raw, world.real_root):
                assert isinstance(decide(world, raw, operation), PathDenied)


@given(scenarios())
def test_the_decision_is_deterministic_and_gathering_never_raises(scenario: Scenario) -> None:
    """Gathering facts twice on an unchanged tree gives the same facts and decision."""
    with built(scenario.layout) as world:
        for relative, operation in scenario.requests:
            raw = world.absolute(relative)
            first, second = gather_facts(raw), gather_facts(raw)
            assert first == second
            assert decide(world, raw, operation) == decide(world, raw, operation)


@given(scenarios())
def test_a_denied_path_has_a_path_category(scenario: Scenario) -> None:
    """A path is only ever denied as outside the roots, at a link boundary, or protected."""
    with built(scenario.layout) as world:
        for relative, operation in scenario.requests:
            decision = decide(world, world.absolute(relative), operation)
            if isinstance(decision, PathDenied):
                assert decision.category in PATH_DENIALS


@given(scenarios())
def test_a_path_that_really_is_protected_is_never_allowed(scenario: Scenario) -> None:
    """A path whose kernel resolution is a protected file or inside key storage is denied."""
    with built(scenario.layout) as world:
        for relative, operation in scenario.requests:
            raw = world.absolute(relative)
            real = os.path.realpath(raw)
            shielded = real in world.protected_files or any(
                within(real, tree) for tree in world.protected_trees
            )
            if shielded:
                decision = decide(world, raw, operation)
                assert isinstance(decision, PathDenied)
                # The category names protection whenever the product saw this same location;
                # whether it always does is the first property's question.
                if real == gather_facts(raw).real:
                    assert DenialCategory.PROTECTED_PATH == decision.category
