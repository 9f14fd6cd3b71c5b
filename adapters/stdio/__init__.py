"""`ledgerclaw mcp serve`: the governed tools over stdio, one process, one session.

Adapter layer.
"""
