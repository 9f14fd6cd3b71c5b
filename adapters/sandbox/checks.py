"""What a start says about the shell sandbox: its state on this kernel, and its warnings.

Adapter layer. `config check`, `doctor`, `daemon run` and `mcp serve` all use these, so an
unconfined or refused shell is said the same way everywhere.
"""

from __future__ import annotations

from pathlib import Path

from adapters.sandbox import launch
from adapters.settings.tools import ShellSettings
from domain.shell.confinement import SandboxMode, missing_features, refusal
from domain.values.audience import Audience


def sandbox_state(shell: ShellSettings, abi: int | None = None) -> str:
    """One line: the mode, the kernel's Landlock ABI, and the network choice."""
    abi = launch.abi_version() if abi is None else abi
    kernel = f"Landlock ABI {abi}" if abi > 0 else "no Landlock"
    opened = sorted(audience for audience in Audience if shell.network_for(audience))
    network = f"network open for {', '.join(opened)}" if opened else "network denied"
    return f"{shell.sandbox}, {kernel}, {network}"


def sandbox_warnings(shell: ShellSettings, config: Path, abi: int | None = None) -> list[str]:
    """What is worth a warning line: no sandbox, a refused shell, or what best effort lacks."""
    abi = launch.abi_version() if abi is None else abi
    if shell.sandbox is SandboxMode.OFF:
        unconfined = (
            f'[tools.shell] sandbox = "off" in {config}: shell commands run unconfined, with'
            " every right of the daemon's user; only the shell policy stands between a command"
            " and the rest of the machine"
        )
        return [unconfined]
    warnings: list[str] = []
    for audience in Audience:
        reason = refusal(shell.sandbox, abi, network=shell.network_for(audience))
        if reason is not None:
            warnings.append(
                f"every shell command of the {audience} audience will be denied: {reason}"
                f" (see [tools.shell] sandbox in {config})"
            )
    if shell.sandbox is SandboxMode.BEST_EFFORT:
        lacking = missing_features(abi, network=False)
        if lacking:
            warnings.append(f"sandbox best_effort: this kernel cannot enforce {'; '.join(lacking)}")
    return list(dict.fromkeys(warnings))
