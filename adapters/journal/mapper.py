"""The pydantic/orjson mapper between domain events and stored rows; adapter layer.

Topics come from the domain catalog, never from Python module paths, so renaming or moving a
class never breaks replay. Older event shapes are upcast with `upcast_vN_vN+1` static
methods as they are read.
"""

from __future__ import annotations

from typing import Any, ClassVar, get_args, get_origin
from uuid import UUID

import orjson
from eventsourcing.persistence import Mapper, StoredEvent, Transcoder
from eventsourcing.utils import get_topic
from pydantic import BaseModel, TypeAdapter, ValidationError

from adapters.errors import UndecodableEventError, UnencodableEventError
from domain.base import DomainEvent
from domain.topics import AGGREGATES, SNAPSHOT_TYPES, events_by_topic

_CLASS_VERSION = "class_version"


class OrjsonTranscoder(Transcoder):
    """JSON bytes through orjson; the mapper hands it JSON-ready values only."""

    def encode(self, obj: Any) -> bytes:  # noqa: ANN401 - the library's Transcoder signature
        """Serialize `obj`."""
        return orjson.dumps(obj)

    def decode(self, data: bytes) -> Any:  # noqa: ANN401 - the library's Transcoder signature
        """Deserialize `data`."""
        return orjson.loads(data)


def upcast(event_type: type[DomainEvent], state: dict[str, Any]) -> dict[str, Any]:
    """Bring a stored state written at an older class version up to `event_type`'s."""
    version = state.pop(_CLASS_VERSION, 1)
    target = event_type.class_version
    if type(version) is not int or not 1 <= version <= target:
        msg = f"{event_type.TOPIC} stored at class version {version!r}; this code reads 1..{target}"
        raise UndecodableEventError(msg)
    while version < target:
        getattr(event_type, f"upcast_v{version}_v{version + 1}")(state)
        version += 1
    return state


class CatalogMapper(Mapper[UUID]):
    """Maps catalog events (and snapshots) to stored events with stable topics."""

    types_by_topic: ClassVar[dict[str, type[DomainEvent]]] = {
        **events_by_topic(),
        **{s.TOPIC: s for s in SNAPSHOT_TYPES},
    }
    journal_names: ClassVar[dict[str, str]] = {get_topic(a): a.JOURNAL_NAME for a in AGGREGATES}
    library_topics: ClassVar[dict[str, str]] = {a.JOURNAL_NAME: get_topic(a) for a in AGGREGATES}

    def to_stored_event(self, domain_event: Any) -> StoredEvent:  # noqa: ANN401 - the library's Mapper signature
        """Encode `domain_event` for the journal."""
        event_type = type(domain_event)
        state = domain_event.model_dump(
            mode="json", exclude={"originator_id", "originator_version"}
        )
        for field in ("originator_topic", "topic"):
            if field in state:
                state[field] = self.journal_names[state[field]]
        for path in event_type.SPARSE_FIELDS:
            _drop_default(state, path, _default_of(event_type, path))
        if event_type.class_version > 1:
            state[_CLASS_VERSION] = event_type.class_version
        try:
            data = self.transcoder.encode(state)
        except orjson.JSONEncodeError as error:
            msg = f"{event_type.__name__} cannot be stored: {error}"
            raise UnencodableEventError(msg) from None
        if self.compressor:
            data = self.compressor.compress(data)
        if self.cipher:
            data = self.cipher.encrypt(data)
        return StoredEvent(
            originator_id=domain_event.originator_id,
            originator_version=domain_event.originator_version,
            topic=event_type.TOPIC,
            state=data,
        )

    def to_domain_event(self, stored_event: StoredEvent) -> DomainEvent:
        """Decode a stored row; an unknown topic or a bad shape is an UndecodableEventError."""
        event_type = self.types_by_topic.get(stored_event.topic)
        where = f"{stored_event.originator_id} v{stored_event.originator_version}"
        if event_type is None:
            msg = f"event {where} has unknown topic {stored_event.topic!r}"
            raise UndecodableEventError(msg)
        data = stored_event.state
        if self.cipher:
            data = self.cipher.decrypt(data)
        if self.compressor:
            data = self.compressor.decompress(data)
        try:
            state = self.transcoder.decode(data)
            if not isinstance(state, dict):
                msg = f"event {where} ({stored_event.topic}) is not a JSON object"
                raise UndecodableEventError(msg)
            upcast(event_type, state)
            for field in ("originator_topic", "topic"):
                if field in state:
                    state[field] = self.library_topics[state[field]]
            state["originator_id"] = stored_event.originator_id
            state["originator_version"] = stored_event.originator_version
            return event_type.model_validate(state)
        except (orjson.JSONDecodeError, ValidationError, KeyError, TypeError) as error:
            msg = f"event {where} ({stored_event.topic}) does not decode: {error}"
            raise UndecodableEventError(msg) from None


_DEFAULTS: dict[tuple[str, str], object] = {}


def _default_of(event_type: type[DomainEvent], path: str) -> object:
    key = (event_type.TOPIC, path)
    if key not in _DEFAULTS:
        _DEFAULTS[key] = _default_in(event_type, path)
    return _DEFAULTS[key]


def _default_in(event_type: type[DomainEvent], path: str) -> object:
    owner: type[BaseModel] = event_type
    *parents, name = path.split(".")
    for parent in parents:
        if parent == "*":  # the values of the dict named just before
            continue
        annotation = owner.model_fields[parent].annotation
        if get_origin(annotation) is dict:
            annotation = get_args(annotation)[1]
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            msg = f"{event_type.__name__}.{path}: {parent} is not a nested model"
            raise TypeError(msg)
        owner = annotation
    default = owner.model_fields[name].get_default(call_default_factory=True)
    return TypeAdapter(object).dump_python(default, mode="json")


def _drop_default(state: dict[str, Any], path: str, default: object) -> None:
    """Remove the field at `path` where it equals `default`; `*` walks a dict's values."""
    head, _, rest = path.partition(".")
    if not rest:
        if head in state and state[head] == default:
            del state[head]
        return
    nested = state.get(head) if head != "*" else None
    if head == "*":
        for value in state.values():
            if isinstance(value, dict):
                _drop_default(value, rest, default)
    elif isinstance(nested, dict):
        _drop_default(nested, rest, default)
