"""The agent loop's pure parts: failover between models and token estimates; domain layer."""
