"""Figures a benchmark hands to `bench/all.py`, besides the tables it prints.

A benchmark calls `report` for each figure it measured. When the environment names a file in
`LEDGERCLAW_BENCH_FIGURES` (as `bench/all.py` does for each script it runs), each figure is
appended to it as one JSON line; otherwise `report` does nothing, so a script run by hand
prints its own tables only.

An aim is one of:

* `("ratio_at_least", x)`: value / baseline >= x (a rate against a ceiling);
* `("ratio_at_most", x)`: value / baseline <= x (a time against a baseline's time);
* `("value_at_least", x)`: value >= x, whatever the baseline;
* `("value_at_most", x)`: value <= x, whatever the baseline (a cost that must not grow).

`bench/all.py` reads the lines back with `read_figures` and judges them with `aim_met`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

ENVIRONMENT = "LEDGERCLAW_BENCH_FIGURES"
AimKind = Literal["ratio_at_least", "ratio_at_most", "value_at_least", "value_at_most"]


def report(  # noqa: PLR0913 - one figure's fields, all by keyword
    figure: str,
    value: float,
    unit: str,
    *,
    baseline: float | None = None,
    baseline_name: str = "",
    aim: tuple[AimKind, float] | None = None,
    script: str = "",
) -> None:
    """Hand one figure to `bench/all.py`, if it asked for figures; else do nothing."""
    path = os.environ.get(ENVIRONMENT)
    if not path:
        return
    line = {
        "figure": figure,
        "value": value,
        "unit": unit,
        "baseline": baseline,
        "baseline_name": baseline_name,
        "aim": None if aim is None else {"kind": aim[0], "target": aim[1]},
        "script": script,
    }
    with Path(path).open("a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def read_figures(path: Path) -> list[dict[str, Any]]:
    """The figures appended to `path`, in order; none if the file does not exist."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def ratio_of(figure: dict[str, Any]) -> float | None:
    """The figure's value over its baseline's, or None without a (non-zero) baseline."""
    baseline = figure.get("baseline")
    if not baseline:
        return None
    return float(figure["value"]) / float(baseline)


def aim_met(figure: dict[str, Any]) -> bool | None:
    """Whether the figure meets its aim; None when it has no aim, or no baseline to compare."""
    aim = figure.get("aim")
    if aim is None:
        return None
    kind, target, value = aim["kind"], float(aim["target"]), float(figure["value"])
    if kind == "value_at_least":
        return value >= target
    if kind == "value_at_most":
        return value <= target
    ratio = ratio_of(figure)
    if ratio is None:
        return None
    return ratio >= target if kind == "ratio_at_least" else ratio <= target
