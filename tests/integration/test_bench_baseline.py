"""The journal benchmark's default-mapper twin stores what the ledgerclaw session stores."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from domain.base import DomainEvent

BENCH = Path(__file__).parents[2] / "bench"
SKIP = {"originator_id", "originator_version", "timestamp"}


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, ModuleType]]:
    """The benchmark's modules, imported by name as its scripts import each other."""
    monkeypatch.syspath_prepend(str(BENCH))
    names = ("paths", "session_data", "stock")
    yield {name: importlib.import_module(name) for name in names}
    for name in names:
        sys.modules.pop(name, None)


def stock_fields(stored: Any) -> dict[str, Any]:
    """A stock event's fields, with those it carries in `extra` spread out."""
    fields = {key: value for key, value in vars(stored).items() if key not in SKIP}
    extra: dict[str, Any] = fields.pop("extra", {})
    return fields | extra


def test_the_stock_twin_stores_every_field_of_every_event(
    bench: dict[str, ModuleType], tmp_path: Path
) -> None:
    """Mirroring a long session succeeds, and each stock event has the event's fields."""
    ledger = bench["paths"].open_ledger(tmp_path / "ledgerclaw.db")
    app = bench["stock"].stock_app(tmp_path / "stock.db")
    try:
        bench["session_data"].build_long_session(
            ledger.journal, ledger.session_id, ledger.run_id, 60
        )
        twin = bench["stock"].mirror_to_stock(ledger.journal, ledger.session_id, app)
        ours = [
            event.model_dump(mode="json", exclude=SKIP)
            for event in ledger.journal.app.events.get(ledger.session_id.as_uuid())
            if isinstance(event, DomainEvent)
        ]
        theirs = [stock_fields(event) for event in app.events.get(twin.id)]
    finally:
        app.close()
        ledger.journal.close()
    assert len(ours) == len(theirs)
    opened = {"session_key", "kind", "audience", "parent_session_id"}
    assert [set(fields) for fields in ours[1:]] == [set(fields) for fields in theirs[1:]]
    assert opened <= set(theirs[0])
