"""Adapters: the SQLite journal, the home directory, configuration and the wiring; adapter layer."""
