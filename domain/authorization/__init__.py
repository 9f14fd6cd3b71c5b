"""Authorization of tool calls as pure decisions: paths, roots and approvals; domain layer."""
