"""The agent loop's pure parts: failover, token estimates, the system prompt; domain layer."""
