"""Every first-party tool, by class, so configuration can be checked against their names.

Adapter layer. `wiring.first_party_tools` builds the runnable tools; this catalog only reads
their definitions, which are class attributes, so checking a file needs no tool instance.
"""

from __future__ import annotations

from adapters.tools.files.attach_file import AttachFile
from adapters.tools.files.edit_file import EditFile
from adapters.tools.files.find_files import FindFiles
from adapters.tools.files.grep import Grep
from adapters.tools.files.list_directory import ListDirectory
from adapters.tools.files.read_file import ReadFile
from adapters.tools.files.write_file import WriteFile
from adapters.tools.session_tools import LoadTool, SetWorkingDirectory, ToolOutputRead
from adapters.tools.shell import ShellExecute
from domain.tools.registry import ToolRegistry

FIRST_PARTY_TOOLS = (
    ReadFile,
    ListDirectory,
    FindFiles,
    Grep,
    WriteFile,
    EditFile,
    AttachFile,
    ShellExecute,
    SetWorkingDirectory,
    ToolOutputRead,
    LoadTool,
)
"""In registration order, the order `ledgerclaw tool list` shows."""


def tool_catalog() -> ToolRegistry:
    """The definitions of every registered tool: the names configuration may use."""
    return ToolRegistry(tool.definition for tool in FIRST_PARTY_TOOLS)
