"""The sandbox a command line runs under: mode, kernel offer, launcher argv; adapter layer.

One `Sandbox` is made at start-up, when the kernel's Landlock ABI is read once. For each
command it builds the ruleset from the call's facts and returns the argv that runs the command
through the launcher, with the `Confinement` its receipt records. It knows nothing of shells:
any command line (a shell, an upstream stdio server) can be confined the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from adapters.sandbox import launch
from adapters.sandbox.ruleset import Reach, Ruleset, RulesetError, build_ruleset
from domain.authorization.roots import TrustedRoot
from domain.shell.confinement import Confinement, SandboxMode, missing_features, refusal
from domain.values.audience import Audience

LAUNCHER = str(Path(launch.__file__).resolve())


class SandboxRefusedError(Exception):
    """The command cannot run under the configured mode (no usable sandbox, or no ruleset)."""


@dataclass(frozen=True)
class Confined:
    """A command line ready to run, and the confinement it will run under."""

    argv: list[str]
    confinement: Confinement
    ruleset: Ruleset | None = None


@dataclass(frozen=True)
class Sandbox:
    """Confines command lines as the configuration says, on the kernel it runs on."""

    mode: SandboxMode = SandboxMode.REQUIRED
    home: Path | None = None
    """The ledgerclaw home, kept out of every rule but the session's own storage."""
    network: bool = False
    """Whether TCP stays open for audiences not named in `network_by_audience`."""
    network_by_audience: Mapping[Audience, bool] = field(default_factory=dict)
    abi: int = field(default_factory=launch.abi_version)
    python: str = sys.executable

    def allows_network(self, audience: Audience) -> bool:
        """Whether commands of `audience` may bind and connect over TCP."""
        return self.network_by_audience.get(audience, self.network)

    def refusal(self, audience: Audience) -> str | None:
        """Why every command of `audience` is refused here, or None when commands may run."""
        return refusal(self.mode, self.abi, network=self.allows_network(audience))

    def confine(  # noqa: PLR0913 - keyword-only facts of one command
        self,
        argv: Sequence[str],
        *,
        roots: Sequence[TrustedRoot],
        protected: Iterable[str],
        tmp_dir: Path,
        audience: Audience,
        search_path: str,
    ) -> Confined:
        """The argv that runs `argv` confined to the call's hierarchies, and its record.

        Raises:
            SandboxRefusedError: `required` on a kernel that cannot enforce the ruleset, or a
                ruleset that cannot be expressed.
        """
        network = self.allows_network(audience)
        if self.mode is SandboxMode.OFF or (self.abi < 1 and self.mode is SandboxMode.BEST_EFFORT):
            record = Confinement(
                mode=self.mode,
                abi=self.abi,
                confined=False,
                network=True,
                missing=missing_features(0, network=network) if self.abi < 1 else (),
            )
            return Confined(argv=list(argv), confinement=record)
        reason = self.refusal(audience)
        if reason is not None:
            raise SandboxRefusedError(reason)
        try:
            reach = Reach(
                roots=roots,
                protected=protected,
                home=None if self.home is None else str(self.home),
                tmp_dir=str(tmp_dir),
                search_path=search_path,
            )
            ruleset = build_ruleset(reach, network=network)
        except RulesetError as error:
            raise SandboxRefusedError(str(error)) from None
        record = Confinement(
            mode=self.mode,
            abi=self.abi,
            confined=True,
            rules_digest=ruleset.digest(),
            network=network,
            missing=missing_features(self.abi, network=network),
            carved=ruleset.carved,
        )
        launcher = [self.python, "-I", "-S", LAUNCHER, *ruleset.arguments(self.abi), "--"]
        return Confined(argv=[*launcher, *argv], confinement=record, ruleset=ruleset)
