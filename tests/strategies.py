"""Hypothesis strategies for ids, values, events and whole sessions; shared by the test suite.

Ids are built from drawn UUIDs rather than `new()`, so Hypothesis can shrink them. Every
strategy produces only what the domain accepts, and only values the journal stores
losslessly (see `lossless_json`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.utils import get_topic
from hypothesis import strategies as st
from pydantic import JsonValue

from domain.agent.failover import FailoverAction, FailureKind
from domain.agent.finish import FinishReason
from domain.agent.pairing import NotRun
from domain.agent.records import ChainModel, QueueKind
from domain.agent.replies import ToolSpec, Usage
from domain.attachments.admission import AttachmentReason
from domain.base import DomainEvent
from domain.devices.aggregate import DeviceRegistry
from domain.devices.events import DevicePaired, DeviceRegistryCreated, DeviceRevoked, DeviceSeen
from domain.ids import (
    AttachmentId,
    AttemptId,
    CallId,
    DeviceId,
    OpaqueId,
    RunId,
    SessionId,
    SpillId,
)
from domain.session import agent_events
from domain.session.agent_events import AGENT_EVENTS
from domain.session.aggregate import Session
from domain.session.events import (
    ApprovalDecided,
    ApprovalRequested,
    AttachmentReceived,
    AttachmentSent,
    AttemptDenied,
    AttemptOutcomeMarkedUnknown,
    AuthorizationAttemptStarted,
    CorrectionIssued,
    MessageAppended,
    PolicyEvaluated,
    RunEnded,
    RunStarted,
    SessionClosed,
    SessionOpened,
    StorageBound,
    ToolReceiptRecorded,
    ToolSchemaLoaded,
    WorkingContextChanged,
    WriterClaimed,
)
from domain.session.opening import SessionOpening
from domain.shell.confinement import Confinement, SandboxMode
from domain.upstream.aggregate import UpstreamServer
from domain.upstream.catalog import ToolDigest, UpstreamTool
from domain.upstream.events import (
    UpstreamCatalogChanged,
    UpstreamServerCreated,
    UpstreamStateChanged,
)
from domain.upstream.states import FailureClass, ServerState
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import (
    ApprovalMode,
    ApprovalScope,
    ApprovalVerdict,
    DenialCategory,
    FileOperation,
    PolicyDecision,
)
from domain.values.conversation import ChatMessage, MessageRole, ToolCallRequest
from domain.values.receipts import (
    RAN_OUTCOMES,
    CancelReason,
    FileActivity,
    InputProblem,
    OutcomeCategory,
    RecordedArguments,
    RemediationCode,
    ShellRun,
    ToolReceipt,
)
from domain.values.runs import RunEndReason, SessionCloseReason
from domain.values.storage import RECENT_FILES_LIMIT

IdT = TypeVar("IdT", bound=OpaqueId)

INT64_MIN = -(2**63)
UINT64_MAX = 2**64 - 1
"""orjson encodes integers in [INT64_MIN, UINT64_MAX] and refuses the rest."""

# -- ids and scalars ----------------------------------------------------------------------


def opaque_ids(kind: type[IdT]) -> st.SearchStrategy[IdT]:
    """Ids of `kind` built from a drawn UUID, so they shrink towards the zero id."""
    return st.binary(min_size=16, max_size=16).map(lambda raw: kind.from_uuid(UUID(bytes=raw)))


def session_ids() -> st.SearchStrategy[SessionId]:
    """Session ids."""
    return opaque_ids(SessionId)


def run_ids() -> st.SearchStrategy[RunId]:
    """Run ids."""
    return opaque_ids(RunId)


def attempt_ids() -> st.SearchStrategy[AttemptId]:
    """Attempt ids."""
    return opaque_ids(AttemptId)


def device_ids() -> st.SearchStrategy[DeviceId]:
    """Device ids."""
    return opaque_ids(DeviceId)


def attachment_ids() -> st.SearchStrategy[AttachmentId]:
    """Attachment ids."""
    return opaque_ids(AttachmentId)


def sha256_digests() -> st.SearchStrategy[str]:
    """64 lowercase hex digits."""
    return st.binary(min_size=32, max_size=32).map(bytes.hex)


def spill_ids() -> st.SearchStrategy[SpillId]:
    """Spill ids."""
    return opaque_ids(SpillId)


_CALL_ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:-"
_TOOL_NAME_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-/"


def call_ids() -> st.SearchStrategy[CallId]:
    """Provider-authored call ids: 1 to 128 printable characters without spaces."""
    return st.text(_CALL_ID_ALPHABET, min_size=1, max_size=128).map(CallId)


def tool_names() -> st.SearchStrategy[str]:
    """Tool names as `ToolName` allows them."""
    return st.text(_TOOL_NAME_ALPHABET, min_size=1, max_size=128)


def short_texts() -> st.SearchStrategy[str]:
    """`ShortText`: 1 to 200 characters."""
    return st.text(min_size=1, max_size=200)


def details() -> st.SearchStrategy[str]:
    """`Detail`: at most 2000 characters."""
    return st.text(max_size=2000)


def utc_datetimes() -> st.SearchStrategy[datetime]:
    """Timezone-aware UTC datetimes over the whole range Python supports."""
    return st.datetimes(timezones=st.just(UTC))


def hex_digests() -> st.SearchStrategy[str]:
    """`HexDigest`: 32 to 128 lowercase hex digits."""
    return st.binary(min_size=16, max_size=64).map(bytes.hex)


_SEGMENT = st.text(
    st.characters(codec="utf-8", exclude_characters="/\x00"),
    min_size=1,
    max_size=16,
).filter(lambda segment: segment not in {".", ".."})


def canonical_paths() -> st.SearchStrategy[str]:
    """Absolute, normalized POSIX paths, `/` included."""
    return st.lists(_SEGMENT, max_size=6).map(lambda segments: "/" + "/".join(segments))


# -- values -------------------------------------------------------------------------------


def lossless_json() -> st.SearchStrategy[JsonValue]:
    """JSON values the journal stores unchanged: finite floats, 64-bit integers."""
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(INT64_MIN, UINT64_MAX)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=20)
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
        max_leaves=12,
    )


def tool_call_requests(
    arguments: st.SearchStrategy[JsonValue] | None = None,
) -> st.SearchStrategy[ToolCallRequest]:
    """Model-authored tool calls with JSON arguments (lossless ones unless told otherwise)."""
    values = lossless_json() if arguments is None else arguments
    return st.builds(
        ToolCallRequest,
        call_id=call_ids(),
        name=tool_names(),
        arguments=st.dictionaries(st.text(max_size=8), values, max_size=4),
    )


@st.composite
def chat_messages(
    draw: st.DrawFn, arguments: st.SearchStrategy[JsonValue] | None = None
) -> ChatMessage:
    """Transcript messages: tool calls only from the assistant, a call id only on tool replies."""
    role = draw(st.sampled_from(MessageRole))
    calls: tuple[ToolCallRequest, ...] = ()
    if role is MessageRole.ASSISTANT:
        calls = tuple(draw(st.lists(tool_call_requests(arguments), max_size=3)))
    call_id = draw(call_ids()) if role is MessageRole.TOOL else None
    return ChatMessage(role=role, content=draw(st.text()), tool_calls=calls, call_id=call_id)


def file_activities(
    paths: st.SearchStrategy[str] | None = None,
) -> st.SearchStrategy[FileActivity]:
    """A canonical path (from `paths` if given) with the operation performed on it."""
    return st.builds(
        FileActivity,
        path=canonical_paths() if paths is None else paths,
        operation=st.sampled_from(FileOperation),
    )


def json_arguments() -> st.SearchStrategy[dict[str, JsonValue]]:
    """Argument objects of lossless JSON values."""
    return st.dictionaries(st.text(max_size=8), lossless_json(), max_size=4)


def recorded_arguments() -> st.SearchStrategy[RecordedArguments]:
    """Recorded arguments: any object, pointers of bounded values, maybe a spill."""
    return st.builds(
        RecordedArguments,
        arguments=json_arguments(),
        bounded=st.lists(st.text(max_size=20), max_size=3).map(tuple),
        spill_id=st.none() | spill_ids(),
    )


def input_problems() -> st.SearchStrategy[InputProblem]:
    """One invalid field (a dotted path) and its message."""
    return st.builds(InputProblem, field=short_texts(), message=details())


@st.composite
def shell_runs(draw: st.DrawFn, paths: st.SearchStrategy[str] | None = None) -> ShellRun:
    """Shell facts: an exit code, or a timeout and none; candidates from `paths` if given."""
    where = canonical_paths() if paths is None else paths
    exit_code = draw(st.none() | st.integers(-64, 255))
    return ShellRun(
        command=draw(st.text(min_size=1, max_size=200)),
        cwd=draw(where),
        exit_code=exit_code,
        timed_out=exit_code is None,
        duration_ms=draw(st.integers(0, 2**40)),
        output_bytes=draw(st.integers(0, 2**40)),
        candidates=tuple(draw(st.lists(where, max_size=4))),
    )


@st.composite
def tool_receipts(
    draw: st.DrawFn,
    paths: st.SearchStrategy[str] | None = None,
    max_files: int = 5,
    outcomes: st.SearchStrategy[OutcomeCategory] | None = None,
) -> ToolReceipt:
    """Receipts in valid shapes only: activity on success, a remediation on a correction.

    A small pool of `paths` makes files recur across receipts, a `max_files` above the
    recent-files limit makes a single receipt overflow it, and `outcomes` can favour some.
    """
    outcome = draw(st.sampled_from(OutcomeCategory) if outcomes is None else outcomes)
    success = outcome is OutcomeCategory.SUCCESS
    correction = outcome is OutcomeCategory.RECOVERABLE_CORRECTION
    cancelled = outcome is OutcomeCategory.CANCELLED
    activity = st.lists(file_activities(paths), max_size=max_files)
    declared = canonical_paths() if paths is None else paths
    invalid = outcome is OutcomeCategory.INVALID_INPUT
    ran = outcome in RAN_OUTCOMES
    return ToolReceipt(
        outcome=outcome,
        file_activity=tuple(draw(activity)) if success else (),
        project_declaration=draw(st.none() | declared) if success else None,
        remediation=draw(st.sampled_from(RemediationCode)) if correction else None,
        spill_id=draw(st.none() | spill_ids()),
        cancel_reason=draw(st.none() | st.sampled_from(CancelReason)) if cancelled else None,
        problems=tuple(draw(st.lists(input_problems(), max_size=3))) if invalid else (),
        shell=draw(st.none() | shell_runs(paths)) if ran else None,
        confinement=draw(st.none() | confinements()),
    )


@st.composite
def confinements(draw: st.DrawFn) -> Confinement:
    """Sandboxes as receipts record them: any mode, ABI, digest, network, gaps and carvings."""
    confined = draw(st.booleans())
    return Confinement(
        mode=draw(st.sampled_from(SandboxMode)),
        abi=draw(st.integers(min_value=0, max_value=64)),
        confined=confined,
        rules_digest=draw(st.text("0123456789abcdef", min_size=64, max_size=64))
        if confined
        else None,
        network=draw(st.booleans()),
        missing=tuple(draw(st.lists(short_texts(), max_size=3))),
        carved=tuple(draw(st.lists(canonical_paths(), max_size=3))),
    )


# -- events -------------------------------------------------------------------------------

_SESSION_TOPIC = get_topic(Session)
_REGISTRY_TOPIC = get_topic(DeviceRegistry)
_UPSTREAM_TOPIC = get_topic(UpstreamServer)


def _event(
    event_type: type[DomainEvent], **fields: st.SearchStrategy[Any]
) -> st.SearchStrategy[Any]:
    """Events of `event_type` with a UUID stream, a version after the first and a UTC time."""
    return st.builds(
        event_type,
        originator_id=st.uuids(),
        originator_version=st.integers(min_value=2, max_value=2**31),
        timestamp=utc_datetimes(),
        **fields,
    )


def _created(
    event_type: type[DomainEvent], aggregate_topic: str, **fields: st.SearchStrategy[Any]
) -> st.SearchStrategy[Any]:
    """First events of a stream: version 1 and the aggregate's library topic."""
    return st.builds(
        event_type,
        originator_id=st.uuids(),
        originator_version=st.just(1),
        timestamp=utc_datetimes(),
        originator_topic=st.just(aggregate_topic),
        **fields,
    )


@st.composite
def _session_links(draw: st.DrawFn, own: SessionId) -> dict[str, Any]:
    """A main session without a parent, or a subagent with a parent other than itself."""
    kind = draw(st.sampled_from(SessionKind))
    parent = None
    if kind is SessionKind.SUBAGENT:
        parent = draw(session_ids().filter(lambda candidate: candidate != own))
    return {"kind": kind, "parent_session_id": parent}


@st.composite
def _session_opened(draw: st.DrawFn) -> SessionOpened:
    """Opened sessions whose kind and parent agree, as `Session.open` requires."""
    session_id = draw(session_ids())
    return SessionOpened(
        originator_id=session_id.as_uuid(),
        originator_version=1,
        timestamp=draw(utc_datetimes()),
        originator_topic=_SESSION_TOPIC,
        session_key=draw(short_texts()),
        audience=draw(st.sampled_from(Audience)),
        client_name=draw(st.none() | short_texts()),
        client_version=draw(st.none() | short_texts()),
        **draw(_session_links(session_id)),
    )


@st.composite
def _receipt_recorded(draw: st.DrawFn) -> ToolReceiptRecorded:
    """Recorded receipts carrying a valid receipt's fields."""
    return ToolReceiptRecorded(
        originator_id=draw(st.uuids()),
        originator_version=draw(st.integers(min_value=2, max_value=2**31)),
        timestamp=draw(utc_datetimes()),
        run_id=draw(run_ids()),
        attempt_id=draw(attempt_ids()),
        **dict(draw(tool_receipts())),
    )


_TURNS = st.integers(min_value=1, max_value=10_000)
_COUNTS = st.none() | st.integers(min_value=0, max_value=2**31)
_SECONDS = st.floats(min_value=0, max_value=3_600, allow_nan=False)


def _usages() -> st.SearchStrategy[Usage]:
    return st.builds(
        Usage,
        input_tokens=_COUNTS,
        output_tokens=_COUNTS,
        cache_read_tokens=_COUNTS,
        cache_write_tokens=_COUNTS,
    )


def _tool_specs() -> st.SearchStrategy[ToolSpec]:
    return st.builds(
        ToolSpec, name=tool_names(), description=st.text(max_size=40), parameters=json_arguments()
    )


_CANDIDATE = {"provider": short_texts(), "model": short_texts(), "profile": short_texts()}
AGENT_FIELDS: dict[type[DomainEvent], dict[str, st.SearchStrategy[Any]]] = {
    agent_events.AgentRunConfigured: {
        "chain": st.lists(
            st.builds(
                ChainModel,
                provider=short_texts(),
                model=short_texts(),
                profiles=st.lists(short_texts(), min_size=1, max_size=2).map(tuple),
            ),
            min_size=1,
            max_size=2,
        ).map(tuple),
        "retry_after_cap": _SECONDS,
        "cooldown": _SECONDS,
        "transient_wait": _SECONDS,
        "fall_back": st.booleans(),
        "same_failure": st.integers(1, 100),
        "failed_turns": st.integers(1, 100),
        "turns": st.integers(1, 10_000),
        "context_window": st.integers(1_024, 10_000_000),
        "output_reserve": st.integers(0, 100_000),
        "max_output_tokens": st.integers(1, 100_000),
    },
    agent_events.TurnStarted: {
        "turn": _TURNS,
        "suffix": st.text(max_size=80),
        "prefix_digest": hex_digests(),
        "tools_digest": hex_digests(),
        "at": _SECONDS,
    },
    agent_events.PromptPrefixSet: {
        "digest": hex_digests(),
        "prefix": st.text(max_size=80),
        "tools": st.lists(_tool_specs(), max_size=2).map(tuple),
        "parallel_safe": st.lists(tool_names(), max_size=2).map(tuple),
    },
    agent_events.ModelRequested: {
        "turn": _TURNS,
        **_CANDIDATE,
        "request_digest": hex_digests(),
        "prefix_digest": hex_digests(),
        "tools_digest": hex_digests(),
        "estimated_tokens": st.integers(min_value=0, max_value=2**31),
    },
    agent_events.ModelReplied: {
        "turn": _TURNS,
        "raw_finish": st.none() | short_texts(),
        "finish": st.sampled_from(FinishReason),
        "usage": st.none() | _usages(),
        "latency_ms": st.integers(min_value=0, max_value=2**31),
        "notes": st.lists(details(), max_size=2).map(tuple),
    },
    agent_events.ModelAttemptFailed: {
        "turn": _TURNS,
        **_CANDIDATE,
        "kind": st.sampled_from(FailureKind).map(str),
        "status": st.none() | st.integers(min_value=100, max_value=599),
        "retry_after": st.none() | _SECONDS,
        "message": details(),
        "action": st.sampled_from(FailoverAction).map(str),
        "wait": _SECONDS,
        "at": _SECONDS,
    },
    agent_events.MessageQueued: {"kind": st.sampled_from(QueueKind), "text": st.text(max_size=80)},
    agent_events.CallAnswered: {
        "position": st.integers(min_value=0, max_value=100),
        "call_id": call_ids(),
        "not_run": st.none() | st.sampled_from(NotRun),
        "outcome": st.none() | st.sampled_from(OutcomeCategory),
        "failed": st.booleans(),
    },
    agent_events.TurnEnded: {"turn": _TURNS},
}
"""The fields of each agent event beside its run id."""


EVENT_STRATEGIES: dict[type[DomainEvent], st.SearchStrategy[Any]] = {
    SessionOpened: _session_opened(),
    StorageBound: _event(
        StorageBound,
        layout_version=st.integers(min_value=1, max_value=UINT64_MAX),
        envelope_root=canonical_paths(),
    ),
    RunStarted: _event(RunStarted, run_id=run_ids(), client_run_id=st.none() | short_texts()),
    WriterClaimed: _event(WriterClaimed, run_id=run_ids(), superseded_run_id=st.none() | run_ids()),
    MessageAppended: _event(MessageAppended, run_id=run_ids(), message=chat_messages()),
    AuthorizationAttemptStarted: _event(
        AuthorizationAttemptStarted,
        run_id=run_ids(),
        attempt_id=attempt_ids(),
        call_id=call_ids(),
        tool_name=tool_names(),
        arguments=st.none() | json_arguments(),
        bounded_arguments=st.lists(st.text(max_size=20), max_size=3).map(tuple),
        arguments_spill_id=st.none() | spill_ids(),
    ),
    PolicyEvaluated: _event(
        PolicyEvaluated,
        run_id=run_ids(),
        attempt_id=attempt_ids(),
        decision=st.sampled_from(PolicyDecision),
        rule=short_texts(),
        detail=details(),
        approval_mode=st.none() | st.sampled_from(ApprovalMode),
        targets=st.lists(file_activities(), max_size=3).map(tuple),
    ),
    ApprovalRequested: _event(
        ApprovalRequested,
        run_id=run_ids(),
        attempt_id=attempt_ids(),
        summary=details(),
        mode=st.sampled_from(ApprovalMode),
        grant_key=details(),
    ),
    ApprovalDecided: _event(
        ApprovalDecided,
        run_id=run_ids(),
        attempt_id=attempt_ids(),
        verdict=st.sampled_from(ApprovalVerdict),
        scope=st.sampled_from(ApprovalScope),
        decided_by=short_texts(),
        directory=st.none() | canonical_paths(),
    ),
    CorrectionIssued: _event(
        CorrectionIssued,
        run_id=run_ids(),
        attempt_id=attempt_ids(),
        remediation=st.sampled_from(RemediationCode),
        detail=details(),
    ),
    AttemptDenied: _event(
        AttemptDenied,
        run_id=run_ids(),
        attempt_id=attempt_ids(),
        category=st.sampled_from(DenialCategory),
        detail=details(),
    ),
    ToolReceiptRecorded: _receipt_recorded(),
    AttemptOutcomeMarkedUnknown: _event(
        AttemptOutcomeMarkedUnknown,
        run_id=run_ids(),
        attempt_id=attempt_ids(),
        reason=short_texts(),
    ),
    WorkingContextChanged: _event(
        WorkingContextChanged,
        run_id=run_ids(),
        project_directory=st.none() | canonical_paths(),
        recent_files=st.lists(canonical_paths(), max_size=RECENT_FILES_LIMIT).map(tuple),
    ),
    ToolSchemaLoaded: _event(ToolSchemaLoaded, run_id=run_ids(), tool_name=tool_names()),
    RunEnded: _event(
        RunEnded, run_id=run_ids(), reason=st.sampled_from(RunEndReason), detail=details()
    ),
    **{event: _event(event, run_id=run_ids(), **AGENT_FIELDS[event]) for event in AGENT_EVENTS},
    SessionClosed: _event(SessionClosed, reason=st.sampled_from(SessionCloseReason)),
    AttachmentReceived: _event(
        AttachmentReceived,
        run_id=run_ids(),
        attachment_id=attachment_ids(),
        name=st.text(min_size=1, max_size=255),
        claimed_type=st.text(min_size=1, max_size=255),
        sniffed_type=st.text(min_size=1, max_size=255),
        size=st.integers(0, 2**40),
        sha256=sha256_digests(),
        accepted=st.booleans(),
        reason=st.sampled_from(AttachmentReason),
        detail=details(),
        media_type=st.none() | st.text(min_size=1, max_size=255),
        path=st.none() | canonical_paths(),
    ),
    AttachmentSent: _event(
        AttachmentSent,
        run_id=run_ids(),
        attempt_id=attempt_ids(),
        attachment_id=attachment_ids(),
        name=st.text(min_size=1, max_size=255),
        media_type=st.text(min_size=1, max_size=255),
        size=st.integers(0, 2**40),
        sha256=sha256_digests(),
        source=canonical_paths(),
    ),
    DeviceRegistryCreated: _created(DeviceRegistryCreated, _REGISTRY_TOPIC),
    DevicePaired: _event(
        DevicePaired,
        device_id=device_ids(),
        display_name=st.text(min_size=1, max_size=100),
        salt=hex_digests(),
        token_hash=hex_digests(),
        paired_at=utc_datetimes(),
        scopes=st.lists(
            st.sampled_from(["operator.read", "operator.write", "operator.approvals"]), max_size=3
        ).map(tuple),
    ),
    DeviceSeen: _event(DeviceSeen, device_id=device_ids(), seen_at=utc_datetimes()),
    DeviceRevoked: _event(DeviceRevoked, device_id=device_ids(), revoked_at=utc_datetimes()),
    UpstreamServerCreated: _created(
        UpstreamServerCreated, _UPSTREAM_TOPIC, name=st.from_regex(r"\A[a-z0-9][a-z0-9_-]{0,31}\Z")
    ),
    UpstreamStateChanged: _event(
        UpstreamStateChanged,
        state=st.sampled_from(ServerState),
        reason=details(),
        failure=st.none() | st.sampled_from(FailureClass),
        next_retry_at=st.none() | utc_datetimes(),
        failures=st.integers(0, 1000),
        changed_at=utc_datetimes(),
    ),
    UpstreamCatalogChanged: _event(
        UpstreamCatalogChanged,
        tools=st.lists(
            st.builds(
                UpstreamTool,
                name=st.from_regex(r"\A[A-Za-z0-9_.-]{1,40}\Z"),
                description=st.text(max_size=80),
                input_schema=st.just({"type": "object"}),
                read_only=st.booleans(),
            ),
            max_size=3,
        ).map(tuple),
        digests=st.lists(
            st.builds(ToolDigest, name=st.text(min_size=1, max_size=20), digest=hex_digests()),
            max_size=3,
        ).map(tuple),
        added=st.lists(st.text(min_size=1, max_size=20), max_size=3).map(tuple),
        listed_at=utc_datetimes(),
    ),
}
"""One strategy per event type of the catalog; a test checks that none is missing."""


def events_of(event_type: type[DomainEvent]) -> st.SearchStrategy[Any]:
    """Valid instances of `event_type`."""
    return EVENT_STRATEGIES[event_type]


def any_event() -> st.SearchStrategy[Any]:
    """A valid instance of any event type in the catalog."""
    return st.one_of(*EVENT_STRATEGIES.values())


# -- whole sessions -----------------------------------------------------------------------


@st.composite
def built_sessions(draw: st.DrawFn) -> Session:
    """A Session taken through a random valid history: runs, messages, attempts, receipts."""
    session_id = draw(session_ids())
    links = draw(_session_links(session_id))
    session = Session.open(
        SessionOpening(
            session_id,
            draw(short_texts()),
            links["kind"],
            draw(st.sampled_from(Audience)),
            links["parent_session_id"],
        )
    )
    if draw(st.booleans()):
        session.bind_storage(draw(st.integers(1, 9)), draw(canonical_paths()))
    for run_id in draw(st.lists(run_ids(), max_size=3, unique=True)):
        session.start_run(run_id)
        session.claim_writer(run_id)
        for message in draw(st.lists(chat_messages(), max_size=3)):
            session.append_message(run_id, message)
        for attempt_id in draw(st.lists(attempt_ids(), max_size=4, unique=True)):
            if attempt_id in session.attempts:
                continue
            _drive_attempt(draw, session, run_id, attempt_id)
        if draw(st.booleans()):
            session.end_run(run_id, draw(st.sampled_from(RunEndReason)))
    return session


def _drive_attempt(draw: st.DrawFn, session: Session, run_id: RunId, attempt_id: AttemptId) -> None:
    """Take one attempt through a random valid part of its lifecycle."""
    recorded = draw(st.none() | recorded_arguments())
    session.start_attempt(run_id, attempt_id, draw(call_ids()), draw(tool_names()), recorded)
    decision = draw(st.none() | st.sampled_from(PolicyDecision))
    if decision is None:
        return
    denial = draw(st.sampled_from(DenialCategory)) if decision is PolicyDecision.DENY else None
    session.evaluate_policy(run_id, attempt_id, decision, rule=draw(short_texts()), denial=denial)
    if decision is PolicyDecision.APPROVAL_REQUIRED:
        session.request_approval(run_id, attempt_id, draw(details()), ApprovalMode.REQUEST)
        verdict = draw(st.sampled_from(ApprovalVerdict))
        session.decide_approval(attempt_id, verdict, draw(short_texts()))
        decision = PolicyDecision.ALLOW if verdict is ApprovalVerdict.APPROVED else None
    if decision is PolicyDecision.ALLOW and draw(st.booleans()):
        session.record_receipt(run_id, attempt_id, draw(tool_receipts()))
