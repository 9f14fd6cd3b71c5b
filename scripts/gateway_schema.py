"""Write the gateway frames' JSON Schema into docs/gateway.md, or check that it is current.

    .venv/bin/python scripts/gateway_schema.py           # rewrite the section between markers
    .venv/bin/python scripts/gateway_schema.py --check   # exit 1 if the page is out of date

The section lies between the markers of `adapters/control/frames.py`; the rest of the page
is left as it is. `tests/integration/test_gateway_docs.py` runs the same comparison.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from adapters.control.frames import SCHEMA_END, SCHEMA_START, schema_markdown

PAGE = Path(__file__).resolve().parents[1] / "docs" / "gateway.md"


def current(text: str) -> str:
    """The page with its schema section replaced by the frames' schema as it is now."""
    start, end = text.index(SCHEMA_START), text.index(SCHEMA_END) + len(SCHEMA_END)
    return text[:start] + schema_markdown() + text[end:]


def main() -> None:
    """Rewrite the page's schema section, or with --check say whether it is current."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = parser.parse_args()
    text = PAGE.read_text(encoding="utf-8")
    wanted = current(text)
    if args.check:
        sys.exit(0 if wanted == text else 1)
    PAGE.write_text(wanted, encoding="utf-8")


if __name__ == "__main__":
    main()
