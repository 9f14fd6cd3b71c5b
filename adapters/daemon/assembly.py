"""One hosting process's parts, wired the same way for the daemon and the stdio server.

Adapter layer.
"""

from __future__ import annotations

from adapters import wiring
from adapters.config import Config
from adapters.daemon.approvals import PendingApprovals
from adapters.daemon.claims import SessionClaims
from adapters.daemon.host import SessionHost
from adapters.home import Home
from adapters.journal.journal import EventJournal
from adapters.journal.writer import SessionWriter
from adapters.tools.dispatcher import Dispatcher


def assemble(
    home: Home, config: Config, journal: EventJournal
) -> tuple[SessionHost, PendingApprovals]:
    """The session host over the governed pipeline, and the approvals it waits on."""
    settings = config.daemon
    approvals = PendingApprovals()
    dispatcher = Dispatcher(
        SessionWriter(journal),
        wiring.first_party_tools(config),
        wiring.pipeline_policy(home, config),
        approvals,
    )
    host = SessionHost(
        journal,
        dispatcher,
        home.root,
        SessionClaims(home),
        audience=settings.audience,
        max_concurrent_calls=settings.max_concurrent_calls,
        idle_seconds=float(settings.idle_timeout_seconds),
    )
    return host, approvals
