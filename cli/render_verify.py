"""Rendering `session replay --verify`: identical, or the first divergent event; CLI layer."""

from __future__ import annotations

from typing import Any

from adapters.api.agent_run import record_event_name
from adapters.api.agent_verify import SessionCheck
from cli import render


def verify_json(check: SessionCheck) -> dict[str, Any]:
    """The verdict as `--json` prints it."""
    runs = []
    for run in check.runs:
        verdict, divergence = run.verdict, run.verdict.divergence
        entry: dict[str, Any] = {
            "run_id": str(run.run_id),
            "identical": verdict.identical,
            "compared": verdict.compared,
            "note": verdict.note,
            "divergence": None,
        }
        if divergence is not None:
            entry["divergence"] = {
                "event": divergence.version,
                "journaled": _named(divergence.journaled),
                "replayed": _named(divergence.decided),
                "differences": list(divergence.differences),
            }
        runs.append(entry)
    return {"session_id": str(check.session_id), "identical": check.identical, "runs": runs}


def _named(record: Any) -> dict[str, Any] | None:  # noqa: ANN401 - a record or None
    if record is None:
        return None
    return {"event": record_event_name(record), **record.model_dump(mode="json")}


def verify_report(check: SessionCheck) -> None:
    """`identical`, or each run's first divergence with what differs."""
    if not check.runs:
        render.line(f"{check.session_id}: no agent run to verify")
        return
    for run in check.runs:
        verdict = run.verdict
        note = f" ({verdict.note})" if verdict.note else ""
        if verdict.identical:
            render.line(f"run {run.run_id}: identical, {verdict.compared} records{note}")
            continue
        divergence = verdict.divergence
        assert divergence is not None  # noqa: S101 - not identical means a divergence
        where = f"event {divergence.version}" if divergence.version else "the journal's end"
        name = record_event_name(divergence.journaled) if divergence.journaled else "nothing"
        render.line(f"run {run.run_id}: diverges at {where} ({name})", "red")
        for difference in divergence.differences:
            render.line(f"  {difference}")
    render.line("identical" if check.identical else "divergent", None if check.identical else "red")
