"""What confined a shell command: the sandbox mode, the kernel's offer, and what was missing.

Domain layer. The policy decides whether a command may run; the sandbox decides where it can
reach. These values say, for every receipt, which sandbox applied, so an audit can answer
"was this command confined?" without trusting anything the command printed.
"""

from __future__ import annotations

from enum import StrEnum

from domain.base import Value

FULL_FILESYSTEM_ABI = 3
"""From ABI 3 the kernel controls truncation too, so every file right is enforced."""
NETWORK_ABI = 4
"""From ABI 4 the kernel can deny TCP bind and connect."""

_FEATURES = (
    (2, "linking and renaming across directories (refer, ABI 2)"),
    (FULL_FILESYSTEM_ABI, "truncation (ABI 3)"),
    (NETWORK_ABI, "TCP bind and connect (ABI 4)"),
    (5, "device ioctl (ABI 5)"),
    (6, "signal and abstract-socket scoping (ABI 6)"),
)


class SandboxMode(StrEnum):
    """How strictly shell commands are confined."""

    REQUIRED = "required"
    """Refuse shell calls unless the kernel enforces every right the ruleset needs."""
    BEST_EFFORT = "best_effort"
    """Confine with what the kernel offers, and record what it lacked."""
    OFF = "off"
    """Run commands unconfined; must be chosen explicitly, and is warned about."""


class Confinement(Value):
    """The sandbox one shell command ran under, as recorded in its receipt."""

    mode: SandboxMode
    abi: int
    """The kernel's Landlock ABI; 0 when it offers none."""
    confined: bool
    """Whether a Landlock ruleset was applied at all."""
    rules_digest: str | None = None
    """sha256 of the allowed hierarchies and the network choice."""
    network: bool = False
    """Whether TCP bind and connect were left open."""
    missing: tuple[str, ...] = ()
    """What the kernel could not enforce (best effort only)."""
    carved: tuple[str, ...] = ()
    """Roots that hold a protected path, allowed through their other entries instead."""


def missing_features(abi: int, *, network: bool) -> tuple[str, ...]:
    """What a kernel with Landlock ABI `abi` cannot enforce for a ruleset."""
    if abi < 1:
        return ("Landlock (the command ran unconfined)",)
    lacking = [text for version, text in _FEATURES if abi < version]
    if network:
        lacking = [text for text in lacking if "TCP" not in text]
    return tuple(lacking)


def refusal(mode: SandboxMode, abi: int, *, network: bool) -> str | None:
    """Why `required` refuses every shell call on this kernel, or None when it does not."""
    if mode is not SandboxMode.REQUIRED:
        return None
    if abi < 1:
        return "the kernel offers no Landlock sandbox"
    if abi < FULL_FILESYSTEM_ABI:
        return f"the kernel's Landlock ABI {abi} cannot control truncation (ABI 3 needed)"
    if not network and abi < NETWORK_ABI:
        return f"the kernel's Landlock ABI {abi} cannot deny network access (ABI 4 needed)"
    return None
