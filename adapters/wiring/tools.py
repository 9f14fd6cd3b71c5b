"""The tool set and the pipeline's policy for a home, from its configuration; adapter layer."""

from __future__ import annotations

import os
import sys
from functools import partial
from pathlib import Path

from adapters.config.secrets import load_secrets
from adapters.fs.facts import file_identity
from adapters.home import Home
from adapters.journal.writer import SessionWriter
from adapters.pipeline.context import PipelinePolicy
from adapters.pipeline.dispatcher import Dispatcher
from adapters.pipeline.toolset import ToolSet
from adapters.runtime.approvers import StandingApprover, TerminalApprover
from adapters.sandbox.sandbox import Sandbox
from adapters.settings.config_file import Config
from adapters.tools.files.attach_file import AttachFile
from adapters.tools.files.edit_file import EditFile
from adapters.tools.files.find_files import FindFiles
from adapters.tools.files.grep import Grep
from adapters.tools.files.list_directory import ListDirectory
from adapters.tools.files.read_file import ReadFile
from adapters.tools.files.write_file import WriteFile
from adapters.tools.session_tools import LoadTool, SetWorkingDirectory, ToolOutputRead
from adapters.tools.shell import ShellExecute
from domain.authorization.facts import canonical
from domain.authorization.roots import ProtectedPaths
from domain.ports import Approver, Journal
from domain.shell.policy import ShellPolicy
from domain.tools.exposure import AudienceTools, ExposurePolicy
from domain.values.audience import Audience
from domain.values.authorization import ApprovalVerdict


def protected_paths(home: Home) -> ProtectedPaths:
    """The home's control-plane files and secret stores, by path and by file identity."""
    # Both spellings of each place: the home as named and where it really is (a home that
    # is reached through a link must not be open through its real path).
    files = [spelling for path in home.protected_files for spelling in _spellings(path)]
    inside_trees = [
        Path(directory, name)
        for tree in home.protected_trees
        for directory, _, names in os.walk(tree)
        for name in names
    ]
    identities = {file_identity(path) for path in (*home.protected_files, *inside_trees)}
    return ProtectedPaths(
        files=frozenset(files),
        trees=frozenset(spelling for path in home.protected_trees for spelling in _spellings(path)),
        identities=frozenset(identity for identity in identities if identity is not None),
    )


def _spellings(path: Path) -> set[str]:
    return {canonical(str(path)), canonical(os.path.realpath(path))}


def pipeline_policy(home: Home, config: Config) -> PipelinePolicy:
    """Everything the tool pipeline decides with, from the home's configuration."""
    tools = config.tools
    audiences = dict(ExposurePolicy().audiences)
    for audience, setting in tools.audiences.items():
        allow = None if setting.allow is None else frozenset(setting.allow)
        audiences[audience] = AudienceTools(allow=allow, deny=frozenset(setting.deny))
    exposure = ExposurePolicy(
        audiences=audiences,
        features=frozenset(tools.features),
        approval_modes=dict(tools.approval),
    )
    return PipelinePolicy(
        exposure=exposure,
        roots=tools.roots,
        protection=partial(protected_paths, home),
        secrets=frozenset(load_secrets(home.secrets, tools.redact_env, os.environ)),
        inline_limit=tools.inline_limit,
        approval_timeout_seconds=float(tools.approval_timeout_seconds),
    )


def first_party_tools(config: Config, home: Home | None = None) -> ToolSet:
    """Every first-party tool, with the configured shell policy and sandbox.

    The sandbox keeps `home` out of every command's reach but the session's own storage.
    """
    shell = config.tools.shell
    defaults = ShellPolicy()
    policy = ShellPolicy(
        hard_deny=(*defaults.hard_deny, *shell.hard_deny),
        reviewed_safe=defaults.reviewed_safe
        if shell.reviewed_safe is None
        else shell.reviewed_safe,
    )
    sandbox = Sandbox(
        mode=shell.sandbox,
        home=None if home is None else home.root,
        network_by_audience={audience: shell.network_for(audience) for audience in Audience},
    )
    return ToolSet(
        [
            ReadFile(),
            ListDirectory(),
            FindFiles(),
            Grep(),
            WriteFile(),
            EditFile(),
            AttachFile(max_bytes=config.attachments.max_attach_bytes),
            ShellExecute(policy, default_timeout=shell.default_timeout_seconds, sandbox=sandbox),
            SetWorkingDirectory(),
            ToolOutputRead(),
            LoadTool(),
        ]
    )


def dispatcher(
    journal: Journal, tools: ToolSet, policy: PipelinePolicy, approver: Approver | None
) -> Dispatcher:
    """The governed pipeline over `journal`, asking `approver` when a call needs consent."""
    return Dispatcher(SessionWriter(journal), tools, policy, approver)


def command_line_approver(*, approve: bool) -> Approver | None:
    """Who answers a native call's approvals: `--approve`, else the terminal, else no one."""
    if approve:
        return StandingApprover(ApprovalVerdict.APPROVED, "cli --approve")
    if sys.stdin.isatty():
        return TerminalApprover("cli terminal")
    return None
