"""The remediation presenter: one fixed instruction per remediation code; domain layer.

An instruction names the tool that fixes the problem. When that tool is hidden from the
model, the factual result is returned unchanged, so the model is never told to do what it
cannot. The presenter grants nothing and reads no arguments.
"""

from __future__ import annotations

from collections.abc import Container

from domain.values.receipts import RemediationCode

INSTRUCTIONS: dict[RemediationCode, tuple[str, str]] = {
    RemediationCode.SET_WORKING_DIRECTORY: (
        "set_working_directory",
        (
            "Next action: call set_working_directory with the project directory, "
            "then retry with a path inside it."
        ),
    ),
    RemediationCode.USE_MANAGED_TEMP_DIR: (
        "shell_execute",
        "Next action: put disposable files in the directory named by $TMPDIR.",
    ),
    RemediationCode.READ_SPILLED_OUTPUT: (
        "tool_output_read",
        "Next action: call tool_output_read with this call_id and a start offset to read the rest.",
    ),
    RemediationCode.LOAD_TOOL: (
        "load_tool",
        "Next action: call load_tool with this tool's name, then call the tool again.",
    ),
    RemediationCode.USE_FILE_TOOL: (
        "read_file",
        "Next action: use read_file, write_file or edit_file for this file instead of the shell.",
    ),
    RemediationCode.REFRESH_FILE_REVISION: (
        "read_file",
        "Next action: call read_file to get the current revision, then retry with it.",
    ),
}


def present(result: str, code: RemediationCode | None, visible_tools: Container[str]) -> str:
    """The model-facing text: the result, plus the code's instruction if its tool is visible."""
    if code is None:
        return result
    tool, instruction = INSTRUCTIONS[code]
    if tool not in visible_tools:
        return result
    return f"{result}\n{instruction}"
