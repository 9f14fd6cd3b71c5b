"""The words the audit listings take as filters, known without loading the read models.

The command line names them in its help, which every command builds, so they live apart from
the queries: plain constants, no projection or domain model behind them. The tests keep
`OPERATIONS` equal to what the file activity projection records. Adapter layer.
"""

from __future__ import annotations

DEFAULT_LIMIT = 50
"""How many rows a listing shows when no --limit is given."""
DECISIONS = ("pending", "allowed", "denied", "corrected", "not_run")
"""How an authorization attempt stands in `authorization_audit.decision`."""
OPERATIONS = ("read", "write", "attach", "declare_project_scope", "shell_candidate")
"""The operations `file_activity.operation` records: file operations, and shell candidates."""
