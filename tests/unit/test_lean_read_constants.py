"""The constants the lean read paths keep for themselves match the code they stand in for.

The session list from current read models and the command line's help know these values
without loading the modules that define them; these tests fail as soon as the two differ.
"""

from __future__ import annotations

from adapters.api import audit_terms, current_catalog
from domain.values.authorization import FileOperation
from projections.file_activity import SHELL_CANDIDATE
from projections.registry import ALL_PROJECTIONS


def test_the_projection_versions_are_those_of_the_registry() -> None:
    """Every projection, by name and version, as the catch-up writes them."""
    expected = {projection.name: projection.version for projection in ALL_PROJECTIONS}

    assert expected == current_catalog.PROJECTION_VERSIONS


def test_the_audit_operations_are_those_file_activity_records() -> None:
    """`--operation` offers each file operation and the shell candidate, in that order."""
    expected = (*(operation.value for operation in FileOperation), SHELL_CANDIDATE)

    assert expected == audit_terms.OPERATIONS
