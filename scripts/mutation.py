"""A mutation run over the security-critical domain modules, with mutmut; run by hand, not in CI.

mutmut changes one small thing at a time in the code (a `<` into `<=`, a `True` into `False`,
a string, an argument) and runs the tests that cover it; a mutant no test notices "survives",
and a surviving mutant in a check is a way to loosen that check unnoticed. The run works in a
temporary copy of the repository, so the working tree stays as it is, and prints the score and
every surviving mutant as a diff.

    .venv/bin/pip install -e '.[mutation]'
    .venv/bin/python scripts/mutation.py                      # the four packages
    .venv/bin/python scripts/mutation.py domain/tools/output.py domain/shell/policy.py
    .venv/bin/python scripts/mutation.py --workdir /tmp/mutation   # keep mutmut's results

The test command is the unit and property tiers (`tests/unit`, `tests/properties`), one pytest
process per mutant (`--max-children 1` by default: the run is CPU heavy), with the derandomized
`ci` Hypothesis profile so that two runs kill the same mutants.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
MODULES = ("domain/authorization", "domain/shell", "domain/tools", "domain/devices")
"""What is mutated by default: the packages that decide what a call may do."""
TESTS = ("tests/unit", "tests/properties")
COPIED_ALONGSIDE = ("adapters", "cli", "projections")
"""Packages the tests import that are not mutated."""
KILLED = frozenset({"killed", "timeout", "caught by type check", "segfault"})
"""Outcomes in which the tests noticed the mutant."""
NOT_RUN = frozenset({"skipped", "not checked", "check was interrupted by user"})
"""Outcomes that say nothing about the tests and are left out of the score."""
_IGNORED = shutil.ignore_patterns(
    ".venv", "mutants", "__pycache__", "*.egg-info", ".*_cache", ".hypothesis", ".git"
)
_RESULT = re.compile(r"^\s+(\S+): (.+)$")


def main() -> int:
    """Run mutmut over the chosen modules in a copy of the repository and print the score."""
    options = _arguments()
    if importlib.util.find_spec("mutmut") is None:
        print("mutmut is not installed: .venv/bin/pip install -e '.[mutation]'", file=sys.stderr)
        return 2
    for module in options.modules:
        if not (ROOT / module).exists():
            print(f"no such module: {module}", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory(prefix="ledgerclaw-mutation-") as scratch:
        work = Path(options.workdir) if options.workdir else Path(scratch) / "repo"
        _prepare(work, options.modules)
        log = work / "mutmut-run.log"
        print(f"mutating {', '.join(options.modules)}; mutmut's progress goes to {log}")
        with log.open("w") as progress:
            run = _mutmut(work, "run", "--max-children", str(options.max_children), out=progress)
        if run.returncode != 0:
            print(f"mutmut run failed with exit code {run.returncode}; see {log}", file=sys.stderr)
            return run.returncode
        results = _results(work)
        _report(work, results)
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "modules", nargs="*", default=list(MODULES), help="packages or files to mutate"
    )
    parser.add_argument(
        "--max-children", type=int, default=1, help="mutants tested at once (default 1)"
    )
    parser.add_argument(
        "--workdir", help="keep the copy (and mutmut's results) here instead of a temporary dir"
    )
    return parser.parse_args()


def _prepare(work: Path, modules: list[str]) -> None:
    """Copy the repository to `work` and configure mutmut there (its setup.cfg section)."""
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(ROOT, work, ignore=_IGNORED)
    only = [f"{module}/*" if (ROOT / module).is_dir() else module for module in modules]
    config = {
        "source_paths": ["domain"],
        "only_mutate": only,
        "also_copy": list(COPIED_ALONGSIDE),
        "pytest_add_cli_args": ["-n", "0", "-p", "no:cacheprovider", "-q"],
        "pytest_add_cli_args_test_selection": list(TESTS),
    }
    lines = ["[mutmut]"] + [f"{key} =\n    " + "\n    ".join(v) for key, v in config.items()]
    (work / "setup.cfg").write_text("\n".join(lines) + "\n")


def _mutmut(
    work: Path, *arguments: str, out: IO[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run one mutmut command in `work`; its output goes to `out`, else it is returned."""
    environment = {**os.environ, "HYPOTHESIS_PROFILE": "ci"}
    return subprocess.run(  # noqa: S603 - our own interpreter running mutmut
        [sys.executable, "-m", "mutmut", *arguments],
        cwd=work,
        env=environment,
        check=False,
        text=True,
        stdout=out or subprocess.PIPE,
        stderr=subprocess.STDOUT if out else None,
    )


def _results(work: Path) -> dict[str, str]:
    """Each mutant's name and outcome, as `mutmut results --all true` lists them."""
    listed = _mutmut(work, "results", "--all", "true").stdout
    return {match[1]: match[2] for line in listed.splitlines() if (match := _RESULT.match(line))}


def _report(work: Path, results: dict[str, str]) -> None:
    counts = Counter(results.values())
    judged = {name: outcome for name, outcome in results.items() if outcome not in NOT_RUN}
    killed = sum(1 for outcome in judged.values() if outcome in KILLED)
    survivors = sorted(name for name, outcome in judged.items() if outcome not in KILLED)
    for name in survivors:
        print(_mutmut(work, "show", name).stdout)
    print("outcomes: " + ", ".join(f"{outcome} {n}" for outcome, n in sorted(counts.items())))
    score = 100 * killed / len(judged) if judged else 100.0
    print(f"score: {killed} of {len(judged)} mutants killed ({score:.1f}%)")
    print(f"surviving: {len(survivors)}")


if __name__ == "__main__":
    sys.exit(main())
