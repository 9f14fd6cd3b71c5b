"""Filesystem adapters: path facts and the session storage envelope; adapter layer."""
