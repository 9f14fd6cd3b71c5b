"""The shell command policy: reading a command, hard-deny and reviewed-safe rules; domain layer."""
