"""The model providers of a configuration, one per `[models.NAME]` table; composition root.

A run asks candidates by provider and model; this is where each becomes a concrete
client: the scripted player, an OpenAI-compatible server or Anthropic, with the keys of
its credential profiles read from `secrets.toml` when a candidate is first asked. A server's
provider is wrapped in `SafeToolNames`, so tool names it refuses (`time/get_current_time`)
go on its wire in a form it accepts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from adapters.config.credentials import profile_key
from adapters.config.loading import secrets_file
from adapters.home import Home
from adapters.journal.events import decoded_stream
from adapters.providers.recorded import RecordedProvider, RecordingError, recorded_steps
from adapters.providers.safe_names import SafeToolNames
from adapters.providers.scripted import ScriptedProvider
from adapters.settings.agent import ModelSettings, ProviderKind
from adapters.settings.config_file import Config
from adapters.wiring.home import open_event_log, open_reader
from domain.agent.failover import Candidate, FailureKind
from domain.agent.replies import ModelFailure, ModelReply, ModelRequest
from domain.errors import LedgerclawError
from domain.ports import ModelProvider
from domain.session.agent_events import agent_record


class ProviderSet:
    """Makes each configured model's provider on first use and closes them together."""

    def __init__(
        self, config: Config, home: Home, environ: Mapping[str, str] | None = None
    ) -> None:
        self._models = dict(config.models)
        self._home = home
        self._environ = os.environ if environ is None else environ
        self._secrets = secrets_file(home.secrets)
        self._made: dict[str, ModelProvider] = {}

    def settings_of(self, candidate: Candidate) -> ModelSettings | None:
        """The `[models.NAME]` table a candidate comes from, if any."""
        name = self.name_of(candidate)
        return None if name is None else self._models[name]

    def name_of(self, candidate: Candidate) -> str | None:
        """The name of the table a candidate comes from (the first, if two describe it)."""
        for name, model in self._models.items():
            if str(model.provider) == candidate.provider and model.model == candidate.model:
                return name
        return None

    def __call__(self, candidate: Candidate) -> ModelProvider:
        """The provider that asks `candidate`; an unknown one fails every request it gets."""
        name = self.name_of(candidate)
        if name is None:
            return _Unknown()
        made = self._made.get(name)
        if made is None:
            made = self._made[name] = self.make(self._models[name])
        return made

    def make(self, model: ModelSettings) -> ModelProvider:
        """A new provider for one table."""
        if model.provider is ProviderKind.SCRIPTED:
            assert model.script is not None  # noqa: S101 - the settings require it
            script = Path(model.script).expanduser()
            if not script.is_absolute():
                script = self._home.config.parent / script
            return ScriptedProvider.from_file(script)
        if model.provider is ProviderKind.RECORDED:
            assert model.recording is not None  # noqa: S101 - the settings require it
            return recorded_provider(self._home, model.recording)
        # The SDKs are imported only when a model of theirs is asked: every other command
        # starts without them.
        if model.provider is ProviderKind.ANTHROPIC:
            from adapters.providers.anthropic_messages import AnthropicProvider  # noqa: PLC0415

            return SafeToolNames(AnthropicProvider(model.base_url, self.key_for))
        from adapters.providers.openai_chat import OpenAICompatProvider  # noqa: PLC0415

        return SafeToolNames(OpenAICompatProvider(model.base_url, self.key_for))

    def key_for(self, profile: str) -> str:
        """The API key of a credential profile, read now; CredentialMissingError if none."""
        return profile_key(self._secrets, self._home.secrets, profile, self._environ)

    async def aclose(self) -> None:
        """Close every provider's connections; each opens new ones when next asked.

        The providers themselves are kept (a scripted one keeps its place in its script),
        so a session can close its connections at the end of each run, in the event loop
        that opened them.
        """
        for provider in self._made.values():
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()


class _Unknown:
    """The provider of a candidate no table describes: it never answers."""

    async def reply(
        self, candidate: Candidate, request: ModelRequest, on_text: object = None
    ) -> ModelReply:
        del request, on_text
        msg = f"no [models.NAME] table describes {candidate.provider}/{candidate.model}"
        raise ModelFailure(candidate, FailureKind.BAD_REQUEST, msg)


def recorded_provider(home: Home, recording: str) -> RecordedProvider:
    """A provider playing the replies of the session `recording` names, read now."""
    reader = open_reader(home)
    try:
        session_id = reader.resolve_session(recording)
    except LedgerclawError as error:
        msg = f"recording {recording}: {error}"
        raise RecordingError(msg) from None
    events = decoded_stream(open_event_log(home), session_id)
    entries = [r for r in map(agent_record, events) if r is not None]
    steps = recorded_steps(entries)
    if not steps:
        msg = f"recording {session_id} holds no model reply to play"
        raise RecordingError(msg)
    return RecordedProvider(steps, f"the recording {session_id}")
