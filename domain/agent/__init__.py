"""The agent loop's pure parts: failover, tokens, the prompt, loop protection; domain layer."""
