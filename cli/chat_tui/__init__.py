"""The terminal chat attached to a running daemon: a Textual app over the gateway; CLI layer.

`conversation`, `entries`, `approval` and `lines` are plain Python (no Textual), so the state
of a conversation can be tested without a terminal; `widgets`, `picker` and `app` are the
Textual side, imported only when `ledgerclaw chat` attaches.
"""
