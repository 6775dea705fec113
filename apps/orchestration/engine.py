"""The director run: a director thread with a canonical OpenAI-aligned transcript, the run's workspace,
and a tool loop in which the director model delegates to agents (child threads reused by sessionId),
uses live tools and leaves its results as workspace items. Every tool call, agent output and lifecycle
step is an OrchLog entry; every provider request/response/error a ProviderEvent.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from typing import Any

from django.db import DatabaseError, connections, models, router, transaction
from django.urls import get_resolver
from django.utils import timezone
from pydantic import ValidationError as PydanticValidationError

from apps.llm import (
    ChatResult,
    LLMError,
    ProviderEventData,
    Tool,
    ToolCallRecord,
    ToolFailure,
    redact,
    run_tool_loop,
)
from apps.llm.configs import llm_config
from apps.llm.queue import waiting_as
from apps.llm.tools import parameters_schema
from apps.orchestration.models import (
    Agent,
    Conversation,
    Director,
    OrchestrationSettings,
    OrchLog,
    Phase,
    ProviderEvent,
    Run,
    RunStatus,
    ThreadKind,
    ThreadStatus,
)
from apps.orchestration.prepared import PreparedQuery
from apps.orchestration.prompts import (
    AGENT_GUIDANCE,
    DIRECTOR_GUIDANCE,
    base_variables,
    mentions_email,
    prompt_rows,
    render_prompt,
    variables_used,
)
from apps.orchestration.selectors import filesystem_root_for_owner
from apps.orchestration.tools import memory as memory_tools
from apps.orchestration.tools.context import Actor, RunContext
from apps.orchestration.tools.registry import available_live_tools, common_tools
from apps.orchestration.tools.schemas import (
    AGENT_TOOL_DESCRIPTION,
    DESCRIPTIONS,
    AgentCallArgs,
    DescribeToolArgs,
    NoArgs,
    ReadApiDocsArgs,
    ValidateToolParamsArgs,
    params_summary,
)
from apps.workspaces import actions as workspace_actions
from apps.workspaces.models import WorkspaceItem
from mailagent.bulk import insert_rows, insert_values

logger = logging.getLogger(__name__)


def _run_director(run: Run) -> Director:
    """The run's director with its API config, prompt and owner: taken from the run when it was loaded with
    them (claim_run selects them in the same query), else read once."""
    if Run.director.is_cached(run):
        director = run.director
        if all(related.is_cached(director) for related in (Director.api_config, Director.prompt, Director.owner)):
            return director
    return Director.objects.select_related("api_config", "prompt", "owner").get(pk=run.director_id)


_UPDATE_STATEMENTS: dict[tuple[str, tuple[str, ...]], tuple[str, list[models.Field[Any, Any]]]] = {}


def _save_fields(thread: Conversation, names: Sequence[str]) -> None:
    """`thread.save(update_fields=names)` with the UPDATE statement built once per set of fields instead of
    compiled by the ORM at every step (a step's transcript save, about a third of its own cost). The values
    go through each field's get_db_prep_save, as save() does; no signals are sent (nothing listens to
    Conversation saves). Like save(), it fails when the row is gone."""
    connection = connections[router.db_for_write(Conversation)]
    key = (connection.alias, tuple(names))
    known = _UPDATE_STATEMENTS.get(key)
    if known is None:
        quote = connection.ops.quote_name
        fields: list[models.Field[Any, Any]] = []
        for name in names:
            field = Conversation._meta.get_field(name)
            assert isinstance(field, models.Field)
            fields.append(field)
        sets = ", ".join(f"{quote(str(field.column))} = %s" for field in fields)
        pk = Conversation._meta.pk
        assert pk is not None
        table = quote(Conversation._meta.db_table)
        known = _UPDATE_STATEMENTS[key] = (f"UPDATE {table} SET {sets} WHERE {quote(str(pk.column))} = %s", fields)  # noqa: S608
    sql, fields = known
    values = [field.get_db_prep_save(getattr(thread, field.attname), connection) for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*values, thread.pk])
        if cursor.rowcount != 1:
            raise DatabaseError(f"conversation {thread.pk} is gone: its transcript could not be saved")


_ENABLED_AGENTS = PreparedQuery(
    Agent,
    lambda director_id: Agent.objects.filter(director_id=director_id, enabled=True).select_related(
        "api_config", "prompt"
    ),
    "director_id",
)


# The run's closing log counts the workspace's items (one row per workspace: none when it is empty).
_LIVE_ITEMS = PreparedQuery(
    WorkspaceItem,
    lambda workspace_id: (
        WorkspaceItem.objects.filter(workspace_id=workspace_id, deleted=False)
        .order_by()
        .values("workspace_id")
        .annotate(live=models.Count("pk"))
        .values_list("live", flat=True)
    ),
    "workspace_id",
)


def stop_reason(reason: str, step_limit: int) -> str:
    """What the run page says about how the director's loop ended (nothing when the model ended it)."""
    if reason == "finished_at_limit":
        return f"ended at the step limit ({step_limit}): the director was told to finish and did"
    if reason == "step_limit":
        return f"stopped at the step limit ({step_limit}) without finishing"
    if reason == "invalid_output":
        return "stopped: the model's tool call was still invalid after a repair turn"
    if reason == "output_truncated":
        return (
            "stopped: the model's reply was cut off at its output token limit, also after a repair turn "
            "(raise “Max output tokens” under Settings → Models, or ask for shorter items)"
        )
    return ""


def read_api_docs(path_prefix: str) -> dict[str, Any]:
    """The mounted JSON API's operations from its OpenAPI document (what /api/docs shows)."""
    # django-ninja and Django's test utilities it imports (~30 MB) stay out of the processes that never describe
    # or serve the API (the cluster, the watchers) until a director asks for the API's documentation.
    from mailagent.api import api

    get_resolver().url_patterns  # noqa: B018 - loads the URLconf, which mounts the apps' routers on `api`
    schema = api.get_openapi_schema()
    operations = []
    for path, methods in schema["paths"].items():
        if path_prefix and not path.startswith(path_prefix):
            continue
        for method, operation in methods.items():
            operations.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "summary": operation.get("summary", ""),
                    "description": (operation.get("description") or "")[:500],
                    "parameters": [
                        {"name": p.get("name"), "in": p.get("in"), "required": bool(p.get("required"))}
                        for p in operation.get("parameters", [])
                    ],
                }
            )
    if not operations:
        raise ToolFailure(f"no API operation under {path_prefix!r}; call read_api_docs without a path for all")
    return {"title": schema["info"]["title"], "version": schema["info"]["version"], "operations": operations}


class RunEngine:
    def __init__(self, run: Run) -> None:
        director = _run_director(run)
        message = run.message
        self.run = run
        self.director = director
        workspace = workspace_actions.open_workspace(
            owner=director.owner,
            run_id=run.pk,
            message_id=message.pk,
            director_id=director.pk,
            director_name=director.name,
            title=message.subject or "(no subject)",
        )
        summary = f"{message.subject or '(no subject)'} — {message.sender}"[:500]
        self.ctx = RunContext(
            run=run,
            director=director,
            message=message,
            workspace=workspace,
            virtual_root=filesystem_root_for_owner(owner_id=director.owner_id),
            owner_id=director.owner_id,
            email_summary=summary,
        )
        self.prompt_tokens = 0
        self.completion_tokens = 0
        # Diagnostics wait here until the step they belong to is saved: one transaction per step instead of
        # one commit per row (see flush_pending and _persist_turn for what a kill -9 can lose).
        self.pending_logs: list[dict[str, Any]] = []  # OrchLog rows
        self.pending_events: list[dict[str, Any]] = []  # ProviderEvent rows
        # Whether this attempt opened or continued an agent session (only then can one still be ongoing).
        self.used_agent_sessions = False
        self.director_thread: Conversation | None = None  # this attempt's, once start() stored it
        self.agents = {agent.slug: agent for agent in _ENABLED_AGENTS(director_id=director.pk)}
        for agent in self.agents.values():
            agent.director = director  # as director.agents would have set it

    @property
    def settings(self) -> OrchestrationSettings:
        return self.ctx.settings

    # --- diagnostics -------------------------------------------------------------------------------

    def log(
        self,
        phase: str,
        *,
        agent: Agent | None = None,
        agent_thread: Conversation | None = None,
        detail: dict[str, Any] | None = None,
        result: Any = None,
        error: str = "",
    ) -> None:
        director_thread = self.ctx.director_thread
        # The row's values by attname, not a model instance: it is only stored (mailagent.bulk.insert_values).
        self.pending_logs.append(
            {
                "timestamp": timezone.now(),
                "run_id": self.run.pk,
                "fetch_cycle_id": self.run.fetch_cycle_id,
                "director_id": self.director.pk,
                "director_name": self.director.name,
                "agent_id": agent.pk if agent else None,
                "agent_name": agent.name if agent else "",
                "email_summary": self.ctx.email_summary,
                "phase": phase,
                "dir_thread_id": director_thread.pk if director_thread else None,
                "agent_thread_id": agent_thread.pk if agent_thread else None,
                "detail": redact(detail or {}),
                "result": redact(result) if result is not None else None,
                "error": error[:4000],
            }
        )

    def flush_pending(self) -> None:
        """Store the buffered OrchLog entries and ProviderEvents (callers wrap it in the step's transaction)."""
        if self.pending_events:  # mailagent.bulk: the rows as bulk_create would store them, without its compiler
            insert_values(ProviderEvent, self.pending_events)
            self.pending_events = []
        if self.pending_logs:
            insert_values(OrchLog, self.pending_logs)
            self.pending_logs = []

    def provider_events(self, thread: Conversation) -> Any:
        def record(event: ProviderEventData) -> None:
            self.pending_events.append(ProviderEvent.values_from_data(event, run_id=self.run.pk, thread_id=thread.pk))

        return record

    def _count_tokens(self, thread: Conversation, result: ChatResult) -> None:
        prompt, completion = result.usage.get("prompt_tokens", 0), result.usage.get("completion_tokens", 0)
        thread.prompt_tokens += prompt
        thread.completion_tokens += completion
        self.prompt_tokens += prompt
        self.completion_tokens += completion

    def _on_assistant(self, thread: Conversation, messages: list[dict[str, Any]], *, defer_final: bool = False) -> Any:
        def on_assistant(result: ChatResult) -> None:
            self._count_tokens(thread, result)
            # A final answer is saved now; a step with tool calls once its tools ran (on_step). The director's
            # final answer (defer_final) is saved in the transaction that closes the run, right after.
            if not result.tool_calls and not defer_final:
                self._persist_turn(thread, messages)

        return on_assistant

    def _persist_turn(
        self, thread: Conversation, messages: list[dict[str, Any]], *, extra: tuple[str, ...] = ()
    ) -> None:
        """Save a completed step: the transcript and every diagnostic buffered since the last step, in one
        transaction. A kill -9 therefore loses at most the step in progress: its ProviderEvents (the request
        and, if it came, the response), the OrchLog entries of the tool calls it already ran, and its part of
        the transcript. What those tools wrote themselves (workspace items, memories) is committed by them."""
        now = timezone.now()
        thread.messages = messages
        thread.last_active_at = now
        fields = ["messages", "last_active_at", "prompt_tokens", "completion_tokens", *extra]
        if thread.kind == ThreadKind.AGENT:
            thread.expires_at = now + dt.timedelta(minutes=self.settings.session_timeout_minutes)
            fields.append("expires_at")
        with transaction.atomic(savepoint=False):  # inside the closing transaction a savepoint buys nothing
            _save_fields(thread, fields)
            self.flush_pending()

    def _tool_logger(self, thread: Conversation, messages: list[dict[str, Any]], agent: Agent | None) -> Any:
        def on_tool(record: ToolCallRecord, message: dict[str, Any]) -> None:
            detail: dict[str, Any] = {
                "tool": record.name,
                "request": record.args,
                "by": "agent" if agent else "director",
                "durationMs": record.duration_ms,
            }
            if record.name.startswith("agent__") and isinstance(record.result, dict):
                detail["sessionId"] = record.result.get("sessionId")
            self.log(
                Phase.TOOL,
                agent=agent,
                agent_thread=thread if agent else None,
                detail=detail,
                result=record.result if record.success else None,
                error=record.error or "",
            )

        return on_tool

    # --- the director ------------------------------------------------------------------------------

    def director_tools(self, actor: Actor) -> list[Tool]:
        tools = [
            Tool("list_agents", DESCRIPTIONS["list_agents"][0], NoArgs, lambda _args: self.list_agents()),
            Tool("list_tools", DESCRIPTIONS["list_tools"][0], NoArgs, lambda _args: self.list_tools(actor)),
            Tool(
                "describe_tool",
                DESCRIPTIONS["describe_tool"][0],
                DescribeToolArgs,
                lambda args: self.describe_tool(actor, args.name),
            ),
            Tool(
                "read_api_docs",
                DESCRIPTIONS["read_api_docs"][0],
                ReadApiDocsArgs,
                lambda args: read_api_docs(args.path),
            ),
            Tool(
                "validate_tool_params",
                DESCRIPTIONS["validate_tool_params"][0],
                ValidateToolParamsArgs,
                lambda args: self.validate_tool_params(actor, args.name, args.params),
            ),
        ]
        for slug, agent in self.agents.items():
            tools.append(
                Tool(
                    f"agent__{slug}",
                    AGENT_TOOL_DESCRIPTION.format(name=agent.name, summary=agent.summary or "a specialised agent"),
                    AgentCallArgs,
                    self._agent_handler(agent),
                )
            )
        return tools + common_tools(self.ctx, actor, available_live_tools(self.ctx))

    def _agent_handler(self, agent: Agent) -> Any:
        def handler(args: AgentCallArgs) -> dict[str, Any]:
            return self.call_agent(agent, args)

        return handler

    def list_agents(self) -> dict[str, Any]:
        return {
            "agents": [
                {
                    "id": str(agent.pk),
                    "slug": agent.slug,
                    "name": agent.name,
                    "summary": agent.summary,
                    "apiConfigId": str(agent.api_config_id or self.director.api_config_id),
                    "tool": f"agent__{agent.slug}",
                }
                for agent in self.agents.values()
            ]
        }

    def list_tools(self, actor: Actor) -> dict[str, Any]:
        return {
            "tools": [
                {"name": tool.name, "description": tool.description, "paramsSummary": params_summary(tool.arguments)}
                for tool in self.director_tools(actor)
            ]
        }

    def _director_tool(self, actor: Actor, name: str) -> Tool:
        for tool in self.director_tools(actor):
            if tool.name == name:
                return tool
        raise ToolFailure(f"no tool named {name!r} is available to you; call list_tools for the names")

    def describe_tool(self, actor: Actor, name: str) -> dict[str, Any]:
        tool = self._director_tool(actor, name)
        return {"name": tool.name, "description": tool.description, "parameters": parameters_schema(tool.arguments)}

    def validate_tool_params(self, actor: Actor, name: str, params: dict[str, Any]) -> dict[str, Any]:
        tool = self._director_tool(actor, name)
        try:
            tool.arguments.model_validate(params)
        except PydanticValidationError as exc:
            errors = [
                {"field": ".".join(str(part) for part in error["loc"]), "message": error["msg"]}
                for error in exc.errors()
            ]
            return {"name": tool.name, "valid": False, "errors": errors}
        return {"name": tool.name, "valid": True, "errors": []}

    def initial_messages(self) -> list[dict[str, Any]]:
        director = self.director
        variables = base_variables(
            self.ctx.message,
            **{
                "director.name": director.name,
                "workspace.id": str(self.ctx.workspace.pk),
                "workspace.label": self.ctx.workspace.display_label,
            },
        )
        rows = prompt_rows(director.prompt)
        used = variables_used(rows)
        if "memories" in used:  # read only for a prompt that shows them
            variables["memories"] = self._memories_text(None)
        messages: list[dict[str, Any]] = [{"role": "system", "content": DIRECTOR_GUIDANCE}]
        messages += render_prompt(rows, variables)
        if director.imprint.strip():
            messages.append({"role": "system", "content": director.imprint.strip()})
        if not mentions_email(used):
            messages.append({"role": "user", "content": f"New email:\n\n{variables['email']}"})
        return messages

    def _memories_text(self, agent: Agent | None) -> str:
        found = memory_tools.visible_memories(self.ctx, agent).order_by("-updated_at").values_list("scope", "content")
        return "\n".join(f"- [{scope}] {content}" for scope, content in found[:20]) or "(none)"

    def start(self) -> None:
        """Store the director thread with its opening messages (no model call yet). process_run calls it in
        the transaction that claims the run and opens its workspace: one commit before the first model call,
        and a kill before it leaves the run queued with nothing of it stored."""
        if self.director_thread is not None or self.director.api_config is None:
            return
        messages = self.initial_messages()
        thread = Conversation(run=self.run, kind=ThreadKind.DIRECTOR, director=self.director, messages=messages)
        insert_rows([thread])
        self.director_thread = self.ctx.director_thread = thread
        # Stored with the first step (or with the run's failure), not in a transaction of its own.
        self.log(Phase.DIRECTOR, detail={"action": "director_start", "workspaceId": self.ctx.workspace.pk})

    def execute(self) -> Run:
        director = self.director
        if director.api_config is None:
            return self._finish(RunStatus.SKIPPED, reason="Director has no API config: nothing was executed")
        self.start()
        thread = self.director_thread
        assert thread is not None
        if reason := thread.undecryptable_reason():
            return self._finish(RunStatus.FAILED, error=f"cannot continue the run: {reason}")
        messages: list[dict[str, Any]] = thread.messages  # the loop extends it; each step saves it
        actor = Actor(kind="director", thread=thread)
        try:
            outcome = run_tool_loop(
                llm_config(director.api_config),
                messages,
                self.director_tools(actor),
                step_limit=director.step_limit,
                events=self.provider_events(thread),
                on_assistant=self._on_assistant(thread, messages, defer_final=True),
                on_tool=self._tool_logger(thread, messages, None),
                on_step=lambda: self._persist_turn(thread, messages),
                finish=True,
            )
        except LLMError as exc:
            # Thread and run close in one transaction: a kill between them left a completed/failed thread on a
            # run still "running", which the stalled-run sweeper then ran a second time.
            with transaction.atomic():
                self._close_thread(thread, ThreadStatus.FAILED)
                self._close_agent_sessions(ThreadStatus.FAILED)
                self.log(Phase.DIRECTOR, detail={"action": "director_failed", "category": exc.category}, error=str(exc))
                return self._finish(RunStatus.FAILED, error=f"model call failed ({exc.category}): {exc}")
        reason = stop_reason(outcome.reason, director.step_limit)
        with transaction.atomic():
            thread.finalized = True
            thread.status, thread.ended_at = ThreadStatus.COMPLETED, timezone.now()
            self._persist_turn(thread, messages, extra=("status", "ended_at", "finalized"))
            self._close_agent_sessions(ThreadStatus.COMPLETED)
            self.log(
                Phase.RESULT,
                detail={
                    "action": "director_complete",
                    "steps": outcome.steps,
                    "stop": outcome.reason,
                    "recoveries": outcome.recoveries,
                },
                result={
                    "final": outcome.final,
                    "workspaceItems": next(iter(_LIVE_ITEMS(workspace_id=self.ctx.workspace.pk)), 0),
                },
            )
            return self._finish(RunStatus.COMPLETED, reason=reason)

    def _close_thread(self, thread: Conversation, status: str) -> None:
        now = timezone.now()
        thread.status = status
        thread.ended_at = now
        thread.save(update_fields=["status", "ended_at", "finalized"])

    def _close_agent_sessions(self, status: str) -> None:
        if not self.used_agent_sessions:
            return
        Conversation.objects.filter(run=self.run, kind=ThreadKind.AGENT, status=ThreadStatus.ONGOING).update(
            status=status, ended_at=timezone.now()
        )

    def _finish(self, status: str, *, reason: str = "", error: str = "") -> Run:
        run = self.run
        run.status, run.status_reason, run.error, run.finished_at = status, reason, error, timezone.now()
        # A retried run adds to what its earlier attempts used.
        run.prompt_tokens += self.prompt_tokens
        run.completion_tokens += self.completion_tokens
        with transaction.atomic(savepoint=False):
            self.flush_pending()
            run.save(
                update_fields=["status", "status_reason", "error", "finished_at", "prompt_tokens", "completion_tokens"]
            )
        return run

    # --- agents ------------------------------------------------------------------------------------

    def _session(self, agent: Agent, session_id: str | None) -> Conversation:
        director_thread = self.ctx.director_thread
        if director_thread is None or director_thread.finalized or director_thread.status != ThreadStatus.ONGOING:
            raise ToolFailure("the director run is completed", reason="completed", sessionId=session_id)
        self.used_agent_sessions = True
        if not session_id:
            return Conversation.objects.create(
                run=self.run,
                kind=ThreadKind.AGENT,
                director=self.director,
                agent=agent,
                agent_name=agent.name,
                parent=director_thread,
                expires_at=timezone.now() + dt.timedelta(minutes=self.settings.session_timeout_minutes),
            )
        thread = Conversation.objects.filter(session_id=session_id, run=self.run, kind=ThreadKind.AGENT).first()
        if thread is None or thread.agent_id != agent.pk:
            raise ToolFailure(f"no session {session_id} with {agent.name} in this run", reason="unknown_session")
        if thread.status == ThreadStatus.COMPLETED:
            raise ToolFailure("this agent session is completed", reason="completed", sessionId=session_id)
        if thread.status == ThreadStatus.EXPIRED or (thread.expires_at and thread.expires_at < timezone.now()):
            if thread.status != ThreadStatus.EXPIRED:
                thread.status, thread.ended_at = ThreadStatus.EXPIRED, timezone.now()
                thread.save(update_fields=["status", "ended_at"])
                self.log(Phase.AGENT, agent=agent, agent_thread=thread, detail={"action": "session_expired"})
            raise ToolFailure(
                "the agent session expired after inactivity; start a new one without sessionId",
                reason="expired",
                sessionId=session_id,
            )
        if thread.status == ThreadStatus.FAILED:
            raise ToolFailure("this agent session failed; start a new one", reason="failed", sessionId=session_id)
        return thread

    def agent_tools(self, agent: Agent, actor: Actor, args: AgentCallArgs) -> list[Tool]:
        options = args.options
        if options is not None and not options.allowTools:
            return []
        allowed = set(agent.allowed_tools if isinstance(agent.allowed_tools, list) else [])
        live = [name for name in available_live_tools(self.ctx) if name in allowed]
        tools = common_tools(self.ctx, actor, live)
        if options is not None and options.toolFilter is not None:
            wanted = set(options.toolFilter)
            tools = [tool for tool in tools if tool.name in wanted]
        return tools

    def call_agent(self, agent: Agent, args: AgentCallArgs) -> dict[str, Any]:
        thread = self._session(agent, args.sessionId)
        actor = Actor(kind="agent", thread=thread, agent=agent)
        if reason := thread.undecryptable_reason():
            raise ToolFailure(f"session {thread.session_id} cannot be continued: {reason}")
        messages = list(thread.messages or [])
        if not messages:
            variables = base_variables(
                self.ctx.message, **{"director.name": self.director.name, "agent.name": agent.name}
            )
            rows = prompt_rows(agent.prompt)
            used = variables_used(rows)
            if "memories" in used:
                variables["memories"] = self._memories_text(agent)
            messages.append({"role": "system", "content": AGENT_GUIDANCE.format(name=agent.name)})
            messages += render_prompt(rows, variables)
            if agent.imprint.strip():
                messages.append({"role": "system", "content": agent.imprint.strip()})
            if not mentions_email(used):
                messages.append({"role": "system", "content": f"The email:\n\n{variables['email']}"})
        messages.append({"role": "user", "content": args.input})
        self._persist_turn(thread, messages)
        self.log(Phase.AGENT, agent=agent, agent_thread=thread, detail={"action": "agent_input", "input": args.input})
        api_config = agent.api_config or self.director.api_config
        assert api_config is not None  # the director run only starts with one
        try:
            outcome = run_tool_loop(
                llm_config(api_config),
                messages,
                self.agent_tools(agent, actor, args),
                step_limit=agent.step_limit,
                events=self.provider_events(thread),
                on_assistant=self._on_assistant(thread, messages),
                on_tool=self._tool_logger(thread, messages, agent),
                on_step=lambda: self._persist_turn(thread, messages),
            )
        except LLMError as exc:
            thread.status, thread.ended_at = ThreadStatus.FAILED, timezone.now()
            thread.save(update_fields=["status", "ended_at"])
            self.log(Phase.AGENT, agent=agent, agent_thread=thread, detail={"action": "agent_failed"}, error=str(exc))
            raise ToolFailure(f"the agent's model call failed ({exc.category}): {exc}", reason="failed") from None
        output = outcome.final if outcome.final is not None else ""
        self.log(
            Phase.AGENT,
            agent=agent,
            agent_thread=thread,
            detail={"action": "agent_output", "steps": outcome.steps, "stop": outcome.reason},
            result=output,
        )
        return {
            "sessionId": thread.session_id,
            "output": output,
            "toolCalls": [record.summary() for record in outcome.records],
            "done": outcome.reason in ("answered", "finished"),
        }


def execute_run(run: Run, engine: RunEngine | None = None) -> Run:
    """Run the director for `run` (with the engine process_run already started, or a new one)."""
    engine = engine or RunEngine(run)
    try:
        with waiting_as(run.queue_requester):  # the run's page shows its place in the model's line
            return engine.execute()
    except Exception:
        # An engine bug fails the run (process_run); what it had buffered is still worth keeping.
        try:
            engine.flush_pending()
        except Exception:
            logger.exception("run %s: buffered diagnostics could not be stored", run.pk)
        raise
