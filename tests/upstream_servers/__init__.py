"""MCP servers the tests connect to as upstreams: fault servers and an OAuth pair."""
