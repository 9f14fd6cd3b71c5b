"""Which process hosts a home and its sessions: daemon lock, host records, claims.

Adapter layer.
"""
