"""The Session aggregate: one stream per main session or subagent run; domain layer."""
