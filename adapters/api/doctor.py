"""Health checks of a home: config, models, journal identity, integrity, events; adapter layer."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from pathlib import Path

from eventsourcing.persistence import StoredEvent
from pydantic import BaseModel

from adapters.api.model_checks import ModelResolution, Resolution, resolve_models
from adapters.config.loading import check_secrets, load_config
from adapters.config.roots import check_roots, root_warnings, unusable_roots
from adapters.errors import JournalCorruptError
from adapters.home import Home, ensure_home
from adapters.journal.event_log import EVENTS_TABLE
from adapters.journal.failures import translated
from adapters.journal.header import SCHEMA_VERSION
from adapters.journal.identity import (
    check_journal_file,
    prepare_journal_file,
    read_schema_version,
)
from adapters.journal.integrity import integrity_failures
from adapters.journal.mapper import CatalogMapper, OrjsonTranscoder
from adapters.sandbox.checks import sandbox_state, sandbox_warnings
from adapters.settings.config_file import Config
from adapters.wiring.home import open_event_log
from domain.errors import LedgerclawError
from domain.ports import EventLog

Progress = Callable[[int, int], None]
"""Called with (done, total) while stored events are decoded."""

BATCH = 2000
MAX_REPORTED_FAILURES = 5


class Check(BaseModel):
    """One doctor check and what it found."""

    name: str
    ok: bool
    detail: str
    warning: bool = False
    """Passed, with something to look at (a missing root): it does not fail the doctor."""
    skipped: bool = False
    """Not run (the model checks under `--offline`): it does not fail the doctor."""


class DoctorReport(BaseModel):
    """Everything the doctor looked at."""

    home: str
    database: str
    schema_version: int | None = None
    events: int = 0
    snapshots: int = 0
    checks: list[Check] = []

    @property
    def ok(self) -> bool:
        """Whether every check passed."""
        return all(check.ok for check in self.checks)


def _decode_rows(
    mapper: CatalogMapper, rows: Sequence[tuple[str, int, str, bytes]], failures: list[str]
) -> None:
    for stream, version, topic, state in rows:
        stored = StoredEvent(
            originator_id=stream, originator_version=version, topic=topic, state=state
        )
        try:
            mapper.to_domain_event(stored)
        except LedgerclawError as error:
            failures.append(str(error))


def _decode_events(log: EventLog, progress: Progress | None) -> tuple[int, list[str]]:
    mapper = CatalogMapper(transcoder=OrjsonTranscoder())
    total = log.count()
    failures: list[str] = []
    done, last = 0, 0
    while rows := log.batch(last, BATCH):
        last = rows[-1].position
        _decode_rows(mapper, [row[1:] for row in rows], failures)
        done += len(rows)
        if progress:
            progress(done, total)
    return total, failures


def _decode_snapshots(conn: sqlite3.Connection) -> tuple[int, list[str]]:
    mapper = CatalogMapper(transcoder=OrjsonTranscoder())
    rows = conn.execute(
        "SELECT originator_id, originator_version, topic, state FROM stored_snapshots"
    ).fetchall()
    failures: list[str] = []
    _decode_rows(mapper, rows, failures)
    return len(rows), failures


def _journal_checks(
    report: DoctorReport, database: Path, log: EventLog, progress: Progress | None
) -> None:
    app_id, version = read_schema_version(database)
    report.schema_version = version
    report.checks.append(
        Check(
            name="schema",
            ok=version == SCHEMA_VERSION,
            detail=f"application id {app_id:#x}, schema version {version}",
        )
    )
    uri = f"{database.as_uri()}?mode=ro"
    with (
        translated(database, "checking it"),
        closing(sqlite3.connect(uri, uri=True, timeout=5)) as conn,
    ):
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        report.checks.append(Check(name="wal", ok=mode == "wal", detail=f"journal mode {mode}"))
        if not _integrity_check(report, database):
            return
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if EVENTS_TABLE not in tables:
            report.checks.append(Check(name="events", ok=True, detail="no events yet"))
            return
        report.events, failures = _decode_events(log, progress)
        report.checks.append(
            Check(
                name="events",
                ok=not failures,
                detail=f"{report.events} events, {len(failures)} undecodable"
                + "".join(f"; {f}" for f in failures[:MAX_REPORTED_FAILURES]),
            )
        )
        if "stored_snapshots" in tables:
            report.snapshots, failures = _decode_snapshots(conn)
            report.checks.append(
                Check(
                    name="snapshots",
                    ok=not failures,
                    detail=f"{report.snapshots} snapshots, {len(failures)} undecodable"
                    + "".join(f"; {f}" for f in failures[:MAX_REPORTED_FAILURES]),
                )
            )


def _integrity_check(report: DoctorReport, database: Path) -> bool:
    """Add the integrity check of `database` to the report; whether it passed."""
    problems = integrity_failures(database, limit=MAX_REPORTED_FAILURES)
    detail = "; ".join(problems) if problems else "ok"
    report.checks.append(Check(name="integrity", ok=not problems, detail=detail))
    return not problems


def secrets_check(home: Home) -> Check:
    """secrets.toml as a start checks it: owner-only, only `[redact] values`."""
    try:
        values = check_secrets(home.secrets)
    except LedgerclawError as error:
        return Check(name="secrets", ok=False, detail=str(error))
    detail = "no secrets file" if values is None else f"{values} values, owner-only"
    return Check(name="secrets", ok=True, detail=detail)


def roots_check(home: Home, config: Config) -> Check:
    """The configured roots: one that is not a directory fails, a missing one warns."""
    roots = check_roots(config.tools.roots)
    problems = unusable_roots(roots)
    if problems:
        return Check(name="roots", ok=False, detail="; ".join(problems))
    warnings = root_warnings(roots, home.config)
    if warnings:
        return Check(name="roots", ok=True, warning=True, detail="; ".join(warnings))
    return Check(name="roots", ok=True, detail=f"{len(roots)} directories")


def sandbox_check(home: Home, config: Config) -> Check:
    """The shell sandbox on this kernel: a refused or unconfined shell warns."""
    state = sandbox_state(config.tools.shell)
    warnings = sandbox_warnings(config.tools.shell, home.config)
    if warnings:
        return Check(
            name="sandbox", ok=True, warning=True, detail=f"{state}; {'; '.join(warnings)}"
        )
    return Check(name="sandbox", ok=True, detail=state)


def model_checks(
    home: Home, config: Config, environ: Mapping[str, str] | None = None, *, offline: bool
) -> list[Check]:
    """One check per `[models.NAME]` table: whether its server answers and lists the model.

    Listed passes; answered without it warns; a missing key or a server that cannot be
    reached or refuses fails. `offline` skips them all without asking anything.
    """
    names = list(config.models)
    if offline:
        return [_model_check(n, skipped=True, detail="skipped (--offline)") for n in names]
    try:
        resolved = resolve_models(config, home, environ)
    except LedgerclawError as error:
        return [_model_check(n, ok=False, detail=str(error)) for n in names]
    return [_resolution_check(n, config, resolved[n]) for n in names]


def _resolution_check(name: str, config: Config, found: ModelResolution) -> Check:
    model = config.models[name].model
    if found.resolution is Resolution.OK:
        detail = f"{found.address} lists {model} among {found.catalog_size} models"
        return _model_check(name, detail=detail)
    if found.resolution is Resolution.NOT_IN_CATALOG:
        detail = (
            f"{found.address} answers but does not list {model} among its"
            f" {found.catalog_size} models ({found.detail})"
        )
        return _model_check(name, warning=True, detail=detail)
    if found.resolution is Resolution.CREDENTIAL_MISSING:
        return _model_check(name, ok=False, detail=f"{found.resolution}: {found.detail}")
    if found.resolution is Resolution.NO_SUCH_PROVIDER:
        detail = f"{found.resolution} at {found.address}: {found.detail}"
        return _model_check(name, ok=False, detail=detail)
    return _model_check(name, detail=found.detail or str(found.resolution))


def _model_check(
    name: str, *, detail: str, ok: bool = True, warning: bool = False, skipped: bool = False
) -> Check:
    return Check(
        name=f"model {name} answers", ok=ok, detail=detail, warning=warning, skipped=skipped
    )


def run_doctor(
    home: Home,
    progress: Progress | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    offline: bool = False,
) -> DoctorReport:
    """Check `home`, creating it and an empty journal when they do not exist yet.

    Each configured model's server is asked for its catalog unless `offline`.
    """
    report = DoctorReport(home=str(home.root), database=str(home.database))
    try:
        ensure_home(home)
    except LedgerclawError as error:
        report.checks.append(Check(name="home", ok=False, detail=str(error)))
        return report
    report.checks.append(Check(name="home", ok=True, detail="readable and writable"))
    config: Config | None = None
    try:
        config = load_config(home.config)
        detail = f"durability {config.journal.durability}" + (
            "" if home.config.exists() else " (no config file: defaults)"
        )
        report.checks.append(Check(name="config", ok=True, detail=detail))
    except LedgerclawError as error:
        report.checks.append(Check(name="config", ok=False, detail=str(error)))
    report.checks.append(secrets_check(home))
    if config is not None:
        report.checks.append(roots_check(home, config))
        report.checks.append(sandbox_check(home, config))
        report.checks.extend(model_checks(home, config, environ, offline=offline))
    try:
        if config is None:
            if not check_journal_file(home.database):
                detail = "no journal yet; none is created until the config is fixed"
                report.checks.append(Check(name="journal", ok=False, detail=detail))
                return report
            detail = "ledgerclaw journal"
        else:
            created = prepare_journal_file(home.database)
            detail = "created an empty journal" if created else "ledgerclaw journal"
        report.checks.append(Check(name="journal", ok=True, detail=detail))
        _journal_checks(report, home.database, open_event_log(home), progress)
    except JournalCorruptError as error:
        report.checks.append(Check(name="journal", ok=False, detail=str(error)))
        if not any(check.name == "integrity" for check in report.checks):
            _integrity_check(report, home.database)
    except LedgerclawError as error:
        report.checks.append(Check(name="journal", ok=False, detail=str(error)))
    return report
