"""`bench/all.py` runs benchmark scripts and hands back the figures they reported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH_ALL = Path(__file__).resolve().parents[2] / "bench" / "all.py"


def test_all_collects_the_figures_a_script_reports() -> None:
    """A quick run of one script yields its figures, each with a positive ratio or none."""
    done = subprocess.run(
        [sys.executable, str(BENCH_ALL), "--quick", "--json", "--only", "session_length"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    document = json.loads(done.stdout)
    assert ["ok"] == [script["status"] for script in document["scripts"]]
    figures = document["figures"]
    assert figures
    assert {"session_length.py"} == {figure["script"] for figure in figures}
    assert all(figure["ratio"] is None or figure["ratio"] > 0 for figure in figures)


def test_an_unknown_script_is_refused_by_name() -> None:
    """Asking for a script that does not exist says which, and runs nothing."""
    done = subprocess.run(
        [sys.executable, str(BENCH_ALL), "--quick", "--only", "no_such_bench"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode != 0
    assert "no_such_bench" in done.stderr
