"""The native agent: an LLM loop with tools.

Each iteration: ``take_user_messages`` → ``request_model`` → ``run_tool_calls`` (the calls of
one response run in parallel) → until ``finish``, a final message, a pause, or
``max_iterations``. The model's history holds only this conversation's own messages and tool
results: sub-agents' events never enter it.

A call its approval policy names waits for a person (``ask_person``) after its ``ActionEvent``
is stored and before it runs; refused, its result is an error saying so, and the model goes on.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ...errors import BackendError, TaskwireError, ToolError
from ...events import ActionEvent, LLMCall, MessageEvent, ObservationEvent, StreamingDeltaEvent
from taskwire_client.events import utc_now
from ...events.closing import INTERRUPTED, closing_status, closing_text
from ...llm.base import LLM, CallAbandoned, ChatMessage, LLMRequest, LLMResponse, ToolCall
from ...permissions.policy import NEVER, Approval
from ...permissions.requests import refusal_text, request_title
from .base import AgentHost
from .call_observer import HostCallObserver
from ..requests_first import RequestsFirst
from ..tools import Tool, ToolContext, ToolResult, parse_arguments, spec_of

log = logging.getLogger(__name__)


class NativeBackend:
    """Drives one conversation with an LLM and tools. Implements ``AgentBackend``."""

    holds_session = False  # its history is its stream: rebuilt from the store by the next run

    def __init__(
        self,
        *,
        llm: LLM,
        model: str,
        tools: list[Tool],
        system_prompt: str,
        max_iterations: int,
        tasks: Any,
        history: list[ChatMessage],
        approval: Approval = NEVER,
        requests_first: RequestsFirst | None = None,
        provider: str | None = None,
    ) -> None:
        self.llm = llm
        self.model = model
        self.provider = provider
        """Whose prices this model's calls are billed at (``runtime/pricing.py``)."""
        self.tools = {tool.name: tool for tool in tools}
        self.tool_specs = [spec_of(tool) for tool in tools]  # made once per tool, shared: never changed
        self.system_prompt = system_prompt
        self.max_iterations = max_iterations
        self.tasks = tasks
        self.messages = history
        self.approval = approval
        self.requests_first = requests_first
        self._system_told = False  # whether this run's usage records carried the system prompt yet

    async def run(self, host: AgentHost) -> str | None:
        self._system_told = False
        for _ in range(self.max_iterations):
            self.take_user_messages(host)
            if host.pause_requested:
                return None
            try:
                response = await self.request_model(host)
            except CallAbandoned:
                return None  # paused during a retry's back-off: the run ends paused
            if not response.tool_calls:
                await host.emit(MessageEvent(role="assistant", content=response.text), wait=False)
                self.messages.append(ChatMessage(role="assistant", content=response.text))
                if host.has_pending_messages:
                    continue
                return response.text
            final = await self.run_tool_calls(host, response)
            if final is not None:
                if host.is_subagent and host.has_pending_messages:
                    continue  # a person wrote to it meanwhile: it answers before it ends
                return final
        raise BackendError(
            f"stopped after max_iterations={self.max_iterations} without finishing", code="max_iterations"
        )

    def take_user_messages(self, host: AgentHost) -> None:
        for content in host.take_user_messages():
            self.messages.append(ChatMessage(role="user", content=content))

    async def request_model(self, host: AgentHost) -> LLMResponse:
        request = LLMRequest(
            model=self.model,
            system=self.system_prompt,
            messages=self.messages,
            tools=self.tool_specs,
        )

        async def on_delta(text: str) -> None:
            await host.emit(StreamingDeltaEvent(content=text))

        started_at = utc_now()
        response = await self.llm.complete(request, on_delta, HostCallObserver(host))
        if self.requests_first is not None:
            # Acting on the answer is this step's CPU: the API's waiting requests go first.
            await self.requests_first.step()
        finish_reason = response.stop_reason or ("tool_calls" if response.tool_calls else "stop")
        system = None if self._system_told else self.system_prompt
        self._system_told = True
        call = LLMCall(model=self.model, finish_reason=finish_reason, response_id=response.id, started_at=started_at,
                       system_instructions=system, provider=self.provider)
        await host.add_usage(response.usage, call)
        return response

    async def run_tool_calls(self, host: AgentHost, response: LLMResponse) -> str | None:
        """Record every call, run them in parallel, feed the results back in call order.
        Returns the final answer when one of them was ``finish``."""
        calls = response.tool_calls
        self.messages.append(ChatMessage(role="assistant", content=response.text, tool_calls=calls))
        recorded: list[ToolCall] = []
        started: set[str] = set()
        results: dict[str, ToolResult] = {}
        running: list[asyncio.Future[None]] = []
        try:
            # Write-ahead: the calls are stored before any of them runs. Waiting for the last one
            # waits for them all (appends are stored in order), so that is one commit, not one
            # each. A call counts as recorded once queued: the store writes it even if this
            # run is cancelled while it waits, and then it must be closed.
            for n, call in enumerate(calls):
                recorded.append(call)
                await host.emit(
                    ActionEvent(
                        tool_name=call.name,
                        tool_call_id=call.id,
                        arguments=call.arguments,
                        thought=response.text or None if n == 0 else None,
                        llm_response_id=response.id,
                    ),
                    wait=n == len(calls) - 1,
                )
            running = [asyncio.ensure_future(self._run_one(host, call, started, results)) for call in calls]
            await asyncio.gather(*running)
        except asyncio.CancelledError:
            # gather gives up at the first call that ends cancelled; the others may still be
            # closing their own work (a sub-agent finishing its sub-agents). Wait for every
            # one, so nothing of this response is recorded after the run's end. A call already
            # being cancelled is not cancelled twice: that would cut its own clean-up short.
            for task in running:
                if not task.done() and not task.cancelling():
                    task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            await self._close_unfinished(host, recorded, started, results)
            raise
        finally:
            for call in calls:
                result = results.get(call.id) or ToolResult(INTERRUPTED, is_error=True)
                self.messages.append(
                    ChatMessage(
                        role="tool", tool_call_id=call.id, name=call.name,
                        content=result.content, is_error=result.is_error,
                    )
                )
        finals = [results[c.id].content for c in calls if c.id in results and results[c.id].finish]
        return finals[0] if finals else None

    async def _run_one(
        self, host: AgentHost, call: ToolCall, started: set[str], results: dict[str, ToolResult]
    ) -> None:
        refused = await self.ask_person(host, call) if self.approval.asks(call.name) else None
        if refused is not None:
            result = refused
        else:
            started.add(call.id)
            result = await self.call_tool(host, call)
        results[call.id] = result
        await host.emit(
            ObservationEvent(
                tool_name=call.name,
                tool_call_id=call.id,
                content=result.content,
                is_error=result.is_error,
                status="failed" if result.is_error else "completed",
            ),
            wait=False,  # a report of what happened; the next call or status change waits
        )

    async def ask_person(self, host: AgentHost, call: ToolCall) -> ToolResult | None:
        """Wait for a person's answer on ``call``; ``None`` when it may run, else the error
        result the model reads. A call that could not run anyway (an unknown tool, invalid
        arguments) is not asked about: it fails as it would have."""
        tool = self.tools.get(call.name)
        if tool is None:
            return None
        try:
            parse_arguments(tool, call.arguments)
        except ToolError:
            return None
        resolution = await host.request_permission(
            tool_call_id=call.id,
            tool_name=call.name,
            title=request_title(call.name, call.arguments),
            arguments=call.arguments,
            reason=f"this agent's approval policy asks before {call.name} runs",
        )
        if resolution.allowed:
            return None
        return ToolResult(refusal_text(call.name, resolution.outcome, resolution.reason), is_error=True)

    async def call_tool(self, host: AgentHost, call: ToolCall) -> ToolResult:
        """Run one tool; its mistakes become error results the model reads."""
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(self.tools)
            return ToolResult(f"Unknown tool {call.name!r}. Available tools: {known}.", is_error=True)
        try:
            args = parse_arguments(tool, call.arguments)
            return await tool.run(ToolContext(host=host, tool_call_id=call.id, tasks=self.tasks), args)  # type: ignore[arg-type]
        except ToolError as exc:
            return ToolResult(exc.detail, is_error=True)
        except TaskwireError as exc:
            return ToolResult(f"{call.name} failed: {exc.detail}", is_error=True)
        except (OSError, ValueError, UnicodeError) as exc:  # what the arguments made the file system say
            return ToolResult(f"{call.name} failed: {exc}", is_error=True)
        except Exception as exc:
            # A tool's own bug still answers its call: the run goes on and the model reads it.
            log.exception("tool %s failed on call %s", call.name, call.id)
            return ToolResult(f"{call.name} failed: {type(exc).__name__}: {exc}", is_error=True)

    async def _close_unfinished(
        self, host: AgentHost, calls: list[ToolCall], started: set[str], results: dict[str, ToolResult]
    ) -> None:
        # One rule for every backend: dropped before it ran -> cancelled; ran without a result -> failed.
        # Queued without waiting for their commit (the status change that follows waits for
        # them), so a second cancellation does not leave the later ones open.
        for call in calls:
            if call.id in results:
                continue
            ran = call.id in started
            content = closing_text(ran)
            results[call.id] = ToolResult(content, is_error=True)
            await host.emit(
                ObservationEvent(
                    tool_name=call.name,
                    tool_call_id=call.id,
                    content=content,
                    is_error=True,
                    status=closing_status(ran),
                ),
                wait=False,
            )

    async def close(self) -> None:
        await self.llm.aclose()
