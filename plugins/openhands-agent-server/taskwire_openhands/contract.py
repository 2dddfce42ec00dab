"""What the plugin relies on inside OpenHands beyond its documented extension points, named in
one place and checked when the plugin loads: on any other release, or if one of these moved,
forwarding stays off and the server's log says why, once.

Public and documented (not checked here): ``--import-modules``, ``register_tool``,
``ToolDefinition.set_executor``, ``ToolExecutor``, ``ConversationVisualizerBase``
(``on_event``, ``create_sub_visualizer``, its ``_state`` for subclasses), ``FastAPI``'s
``include_router`` and ``add_middleware``, ``app.state.conversation_service``, the server's
auth dependencies and ``EventSortOrder``.

Relied on, not promised by OpenHands (each has a check below):

- ``TaskManager._get_conversation`` asks the parent conversation's ``_visualizer`` for a
  ``create_sub_visualizer`` and builds the sub-conversation on the calling thread: this is how a
  sub-agent gets our stamped visualizer.
- ``TaskManager._resume_task`` does *not*: a resumed task is read from disk instead
  (``resumed.py``); were it to start asking, its events would be reported twice.
- ``LocalConversation._visualizer``: the agent-server builds its conversations with
  ``visualizer=None``; the plugin sets it on the root (nothing else reads it but ``TaskManager``,
  OpenHands' agent hooks and its ``DelegateTool``, which get ``None`` from us as before).
- ``EventService._pub_sub``: the server's fan-out to every subscriber of a conversation (its
  sockets, webhooks); the server publishes its unpersisted ``StreamingDeltaEvent`` the same way.
- ``EventService.conversation_dir`` and the layout under it, ``subagents/<id hex>/events/``
  (``TaskManager``'s ``_SUBAGENTS_DIR``, ``EVENT_NAME_RE``): where the search reads sub-agents.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from importlib import metadata

TESTED = {"openhands-agent-server": "1.58.2", "openhands-sdk": "1.58.2", "openhands-tools": "1.58.2"}
"""The releases the plugin was tested with; it forwards on these exactly."""


def version_problems() -> list[str]:
    """Why the installed OpenHands is not the one the plugin was tested with (empty: it is)."""
    problems = []
    for name, tested in TESTED.items():
        try:
            found = metadata.version(name)
        except metadata.PackageNotFoundError:
            found = "not installed"
        if found != tested:
            problems.append(f"{name} is {found}, this plugin was tested with {tested} only")
    return problems


def _source_of(fn: Callable[..., object]) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return ""


def _checks() -> list[tuple[str, Callable[[], bool]]]:
    from openhands.agent_server import dependencies, event_router, init_router, models
    from openhands.agent_server.conversation_service import ConversationService
    from openhands.agent_server.event_service import EventService
    from openhands.agent_server.pub_sub import PubSub
    from openhands.sdk.conversation.impl.local_conversation import LocalConversation
    from openhands.sdk.conversation.persistence_const import EVENT_NAME_RE, EVENTS_DIR
    from openhands.tools.task import manager
    from openhands.tools.task.definition import TaskToolSet

    event_service_fields = {f.name for f in dataclasses.fields(EventService)}
    get_conversation = _source_of(manager.TaskManager._get_conversation)
    return [
        ("TaskManager._get_conversation asks parent._visualizer.create_sub_visualizer",
         lambda: "parent._visualizer" in get_conversation and "create_sub_visualizer(" in get_conversation),
        ("TaskManager._resume_task builds the resumed sub-conversation without a sub-visualizer",
         lambda: "def _resume_task" in _source_of(manager.TaskManager._resume_task)
         and "create_sub_visualizer" not in _source_of(manager.TaskManager._resume_task)),
        ("TaskManager persists sub-agents under subagents/", lambda: getattr(manager, "_SUBAGENTS_DIR", None) == "subagents"),
        ("LocalConversation has _visualizer", lambda: "_visualizer" in LocalConversation.__annotations__),
        ("TaskToolSet.create(conv_state, confirmation_handler, sub_agent_scope)",
         lambda: list(inspect.signature(TaskToolSet.create).parameters)[:3] == ["conv_state", "confirmation_handler", "sub_agent_scope"]),
        ("EventService._pub_sub is a PubSub field",
         lambda: "_pub_sub" in event_service_fields and callable(getattr(PubSub, "__call__", None))),
        ("EventService.conversation_dir", lambda: isinstance(inspect.getattr_static(EventService, "conversation_dir", None), property)),
        ("EventService.get_conversation", lambda: callable(getattr(EventService, "get_conversation", None))),
        ("ConversationService.get_event_service is a coroutine function",
         lambda: inspect.iscoroutinefunction(ConversationService.get_event_service)),
        ("event files are events/event-NNNNN-<id>.json",
         lambda: EVENTS_DIR == "events" and EVENT_NAME_RE.match("event-00001-0123abcd-aaaa.json") is not None),
        ("check_session_api_key, require_initialized, get_event_service",
         lambda: all(callable(f) for f in (dependencies.check_session_api_key, init_router.require_initialized,
                                           dependencies.get_event_service))),
        ("EventSortOrder TIMESTAMP, TIMESTAMP_DESC and normalize_datetime_to_server_timezone",
         lambda: {"TIMESTAMP", "TIMESTAMP_DESC"} <= {o.value for o in models.EventSortOrder}
         and callable(event_router.normalize_datetime_to_server_timezone)),
    ]


def contract_problems() -> list[str]:
    """What moved, of what the plugin relies on (empty: nothing)."""
    problems = []
    try:
        checks = _checks()
    except Exception as exc:  # a module or name is gone
        return [f"cannot import what the plugin relies on: {type(exc).__name__}: {exc}"]
    for name, check in checks:
        try:
            holds = check()
        except Exception as exc:
            holds, name = False, f"{name} ({type(exc).__name__}: {exc})"
        if not holds:
            problems.append(f"moved: {name}")
    return problems
