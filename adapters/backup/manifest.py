"""The manifest written beside each backup copy: what the copy is and how to check it.

`<copy>.manifest.json` names the copy's file, its size and sha256, the journal's identity
and schema version, the journal position the copy ends at and when it was taken. It is a
checksum record, not a signature: it tells a damaged or altered copy from an intact one.
Adapter layer.
"""

from __future__ import annotations

from pathlib import Path

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters.backup.errors import BackupVerificationError
from adapters.backup.files import write_bytes_whole

MANIFEST_SUFFIX = ".manifest.json"
MANIFEST_FORMAT = 1
MAX_MANIFEST_BYTES = 64 * 1024
"""A manifest is a few hundred bytes; anything much larger is not one."""


class Manifest(BaseModel):
    """The facts of one backup copy, as recorded when it was taken."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: int = Field(MANIFEST_FORMAT, ge=1, le=MANIFEST_FORMAT)
    file: str = Field(min_length=1)
    size: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    application_id: int
    schema_version: int = Field(ge=0)
    journal_position: int = Field(ge=0)
    events: int = Field(ge=0)
    created_at: str
    source: str


def manifest_path(copy: Path) -> Path:
    """Where the manifest of `copy` lives."""
    return copy.with_name(copy.name + MANIFEST_SUFFIX)


def write_manifest(copy: Path, manifest: Manifest) -> Path:
    """Write `manifest` beside `copy`, whole or not at all; returns its path."""
    path = manifest_path(copy)
    data = orjson.dumps(manifest.model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n"
    write_bytes_whole(path, data)
    return path


def read_manifest(copy: Path) -> Manifest:
    """The manifest beside `copy`.

    Raises:
        BackupVerificationError: it is missing, unreadable, not a manifest, or names
            another file.
    """
    path = manifest_path(copy)
    try:
        with path.open("rb") as source:
            raw = source.read(MAX_MANIFEST_BYTES + 1)
    except FileNotFoundError:
        msg = f"backup {copy} has no manifest ({path.name} is missing)"
        raise BackupVerificationError(msg) from None
    except OSError as error:
        msg = f"cannot read the manifest {path}: {error.strerror or error}"
        raise BackupVerificationError(msg) from None
    if len(raw) > MAX_MANIFEST_BYTES:
        msg = f"manifest {path} is larger than {MAX_MANIFEST_BYTES} bytes; it is not a manifest"
        raise BackupVerificationError(msg)
    try:
        manifest = Manifest.model_validate(orjson.loads(raw))
    except orjson.JSONDecodeError as error:
        msg = f"manifest {path} is not valid JSON: {error}"
        raise BackupVerificationError(msg) from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        msg = f"manifest {path} is not a ledgerclaw backup manifest: {where}: {first['msg']}"
        raise BackupVerificationError(msg) from None
    if manifest.file != copy.name:
        msg = f"manifest {path} describes {manifest.file!r}, not {copy.name!r}"
        raise BackupVerificationError(msg)
    return manifest
