"""Upstream MCP servers: their connections, catalogs and governed tools; adapter layer."""
