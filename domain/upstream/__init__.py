"""Upstream MCP servers as the journal knows them: states, catalogs, failures; domain layer."""
