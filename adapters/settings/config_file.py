"""The whole of config.toml, one typed section per part of the runtime; adapter layer."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from adapters.settings.agent import AgentSettings, ModelSettings
from adapters.settings.attachments import AttachmentSettings
from adapters.settings.daemon import DaemonSettings
from adapters.settings.journal import JournalSettings
from adapters.settings.mcp import McpSettings
from adapters.settings.tools import ToolSettings


class Config(BaseModel):
    """The whole configuration file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    journal: JournalSettings = JournalSettings()
    tools: ToolSettings = ToolSettings()
    daemon: DaemonSettings = DaemonSettings()
    agent: AgentSettings = AgentSettings()
    models: dict[str, ModelSettings] = {}
    attachments: AttachmentSettings = AttachmentSettings()
    mcp: McpSettings = McpSettings()
