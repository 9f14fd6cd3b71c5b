"""Arguments of an upstream tool, validated against its own JSON Schema; adapter layer.

The pipeline decodes every call's arguments with the tool's model before anything else; for
an upstream tool that model checks the schema the server listed, so a call the server would
refuse is answered as invalid input here and never sent.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar, Self

from jsonschema import exceptions, validators  # type: ignore[import-untyped]
from pydantic import ConfigDict, JsonValue, RootModel, model_validator

log = logging.getLogger(__name__)
ERRORS_SHOWN = 5


class UpstreamArguments(RootModel[dict[str, JsonValue]]):
    """A call's arguments: a JSON object, checked against the tool's input schema."""

    model_config = ConfigDict(frozen=True)
    schema_validator: ClassVar[Any] = None

    @model_validator(mode="after")
    def _check_schema(self) -> Self:
        checker = type(self).schema_validator
        if checker is None:
            return self
        found = sorted(checker.iter_errors(self.root), key=lambda error: list(error.path))
        if found:
            lines = [_line(error) for error in found[:ERRORS_SHOWN]]
            if len(found) > ERRORS_SHOWN:
                lines.append(f"and {len(found) - ERRORS_SHOWN} more")
            raise ValueError("; ".join(lines))
        return self


def _line(error: exceptions.ValidationError) -> str:
    where = ".".join(str(part) for part in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def arguments_model(name: str, schema: dict[str, Any]) -> type[UpstreamArguments]:
    """The argument model of the tool `name`; a schema that is not valid checks nothing."""
    checker: Any = None
    try:
        kind = validators.validator_for(schema)
        kind.check_schema(schema)
        checker = kind(schema)
    except (exceptions.SchemaError, TypeError) as error:
        log.warning("the input schema of %s is not valid JSON Schema: %s", name, error)
    return type("Arguments", (UpstreamArguments,), {"schema_validator": checker})
