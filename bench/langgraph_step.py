"""LangGraph's SqliteSaver sync step: the baseline `dispatch.py` times beside a governed call.

A step is one synchronous `invoke` of a compiled LangGraph graph with a single node, whose work
is reading the same 10-line file as the governed `read_file` call; the graph is checkpointed by
`langgraph.checkpoint.sqlite.SqliteSaver` on a real SQLite file in WAL mode with the same
`synchronous` setting as the journal it is compared with, and every step runs on the same
thread id with `durability="sync"`, so its checkpoints are on disk before `invoke` returns.

This module holds no command line: `dispatch.py` runs the step among its cases.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import ExitStack, closing
from pathlib import Path
from typing import TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

THREAD = "bench"
"""Every step runs on this one thread id, as one session's calls share one stream."""


class ReadState(TypedDict):
    """The graph's state: the file to read, and the text the last step read."""

    path: str
    text: str


def read_node(state: ReadState) -> dict[str, str]:
    """The node's work: read the whole file, as the tool does."""
    return {"text": Path(state["path"]).read_text(encoding="utf-8")}


def graph_step(
    stack: ExitStack, database: Path, file: Path, synchronous: str
) -> Callable[[], None]:
    """A callable making one checkpointed step that reads `file`, on a saver kept in `stack`.

    Args:
        stack: closes the saver's connection when it closes.
        database: the SQLite file of the checkpoints (created if missing).
        file: the file each step reads.
        synchronous: the value of `PRAGMA synchronous` (`FULL`, `NORMAL`).
    """
    conn = stack.enter_context(closing(sqlite3.connect(database, check_same_thread=False)))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    builder = StateGraph(ReadState)
    builder.add_node("read", read_node)
    builder.add_edge(START, "read")
    builder.add_edge("read", END)
    graph = builder.compile(checkpointer=SqliteSaver(conn))
    config: RunnableConfig = {"configurable": {"thread_id": THREAD}}
    start: ReadState = {"path": str(file), "text": ""}
    expected = file.read_text(encoding="utf-8")

    def step() -> None:
        state = graph.invoke(start, config, durability="sync")
        if state["text"] != expected:
            msg = f"the LangGraph step read {state['text']!r}, not the file's text"
            raise RuntimeError(msg)

    return step
