"""The `ledgerclaw` command: parse, call, render; CLI layer."""
