"""Hosting sessions as actors, apart from any transport: runs, approvals, recovery.

Adapter layer.
"""
