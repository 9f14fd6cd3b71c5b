"""docs/gateway.md shows the frame models' JSON Schema exactly as the models give it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from adapters.control.frames import FRAMES, SCHEMA_END, SCHEMA_START, schema_markdown

PAGE = Path(__file__).parents[2] / "docs" / "gateway.md"


def test_the_pages_schema_section_equals_the_models() -> None:
    """The section between the markers is what the models' JSON Schema renders to now."""
    text = PAGE.read_text(encoding="utf-8")
    start, end = text.index(SCHEMA_START), text.index(SCHEMA_END) + len(SCHEMA_END)

    assert schema_markdown() == text[start:end]
    assert all(f"#### `{model.__name__}`" in text for model in FRAMES)


def test_the_schema_script_checks_the_page() -> None:
    """`scripts/gateway_schema.py --check` exits 0 while the page is current."""
    script = Path(__file__).parents[2] / "scripts" / "gateway_schema.py"

    done = subprocess.run([sys.executable, str(script), "--check"], check=False, timeout=60)

    assert 0 == done.returncode
