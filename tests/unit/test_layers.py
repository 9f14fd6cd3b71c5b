"""The dependency rule for the domain layer, checked on the source with `ast`."""

from __future__ import annotations

import ast
from pathlib import Path

import domain

DOMAIN = Path(domain.__file__).parent
ALLOWED_EVENTSOURCING = {"eventsourcing.domain"}
FORBIDDEN = {
    "sqlite3",
    "sqlite_utils",
    "anyio",
    "mcp",
    "httpx",
    "httpx2",
    "starlette",
    "uvicorn",
    "typer",
    "rich",
    "orjson",
    "socket",
    "subprocess",
}


def domain_modules() -> dict[str, ast.Module]:
    """Every module under domain/, parsed, keyed by its path relative to the package."""
    return {
        str(path.relative_to(DOMAIN)): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted(DOMAIN.rglob("*.py"))
    }


def imported_modules(tree: ast.Module) -> set[str]:
    """The absolute names `tree` imports; `from a import b` counts as `a.b` (b may be a module)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_domain_walk_finds_the_aggregates() -> None:
    """The walk reaches the nested aggregate modules, so the checks below see them."""
    expected = {"session/aggregate.py", "devices/aggregate.py", "base.py"}
    assert expected <= set(domain_modules())


def test_domain_imports_only_the_pure_eventsourcing_module() -> None:
    """Domain code uses eventsourcing.domain and no other eventsourcing module."""
    used = {
        ".".join(name.split(".")[:2])
        for tree in domain_modules().values()
        for name in imported_modules(tree)
        if name.split(".")[0] == "eventsourcing"
    }
    assert ALLOWED_EVENTSOURCING == used


def test_domain_imports_no_infrastructure() -> None:
    """No domain module imports storage, network, process, CLI or serialization libraries."""
    offenders = {
        (path, name)
        for path, tree in domain_modules().items()
        for name in imported_modules(tree)
        if name.split(".")[0] in FORBIDDEN
    }
    assert set() == offenders


def test_domain_never_calls_open() -> None:
    """Domain code never calls the builtin `open`, so it never touches files."""
    calls = [
        (path, node.lineno)
        for path, tree in domain_modules().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open"
    ]
    assert [] == calls
