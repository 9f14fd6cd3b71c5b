"""The eventsourcing Application behind the journal, and its SQLite tuning; adapter layer."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.persistence import InfrastructureFactory
from eventsourcing.sqlite import SQLiteConnection, SQLiteConnectionPool, SQLiteFactory
from eventsourcing.utils import Environment, EnvType, get_topic

from adapters.journal.mapper import CatalogMapper, OrjsonTranscoder

SNAPSHOT_INTERVAL = 200
"""The journal snapshots a stream after each save that crosses a multiple of this version."""
SYNCHRONOUS = "SQLITE_SYNCHRONOUS"


class TunedConnectionPool(SQLiteConnectionPool):
    """A pool whose connections use the configured `PRAGMA synchronous`."""

    synchronous = "FULL"

    def _create_connection(self) -> SQLiteConnection:
        connection = super()._create_connection()
        connection._sqlite_conn.execute(f"PRAGMA synchronous={self.synchronous}")  # noqa: SLF001 - the library exposes no hook
        return connection


class TunedSQLiteFactory(SQLiteFactory):
    """The library's SQLite factory with a durability setting (`SQLITE_SYNCHRONOUS`)."""

    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        old = self.datastore.pool
        pool = TunedConnectionPool(db_name=old.db_name, lock_timeout=old.lock_timeout)
        pool.synchronous = {"FULL": "FULL", "NORMAL": "NORMAL"}[
            self.env.get(SYNCHRONOUS, "FULL").upper()
        ]
        old.close()
        self.datastore.pool = pool


class JournalApplication(Application[UUID]):
    """Sessions and the device registry in one notification log."""

    name = "ledgerclaw"
    is_snapshotting_enabled = True
    env = {  # noqa: RUF012 - the library reads this class attribute
        "PERSISTENCE_MODULE": get_topic(TunedSQLiteFactory),
        "TRANSCODER_TOPIC": get_topic(OrjsonTranscoder),
        "MAPPER_TOPIC": get_topic(CatalogMapper),
    }

    def construct_env(self, name: str, env: EnvType | None = None) -> Environment:
        """Build the environment from the class and the caller only.

        The process environment is ignored on purpose: no stray variable may move the
        journal or swap its store.
        """
        merged: dict[str, Any] = dict(type(self).env)
        merged["IS_SNAPSHOTTING_ENABLED"] = "y"
        if env is not None:
            merged.update(env)
        return Environment(name, merged)

    def construct_factory(self, env: Environment) -> InfrastructureFactory[Any]:
        """The configured infrastructure factory."""
        return InfrastructureFactory.construct(env)
