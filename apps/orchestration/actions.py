"""Writes for directors and runs (DESIGN.md: typed, keyword-only, side effects on commit)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connections, router, transaction
from django.urls import reverse
from django.utils import timezone
from django_q.tasks import async_task

from apps.orchestration.models import (
    Agent,
    Approval,
    ApprovalStatus,
    Director,
    Memory,
    MemoryScope,
    OrchLog,
    Run,
    RunStatus,
)
from apps.orchestration.prepared import PreparedQuery
from apps.workspaces.actions import push_inbox_entry
from apps.workspaces.models import EntrySource

logger = logging.getLogger(__name__)


class DirectorNameTaken(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class RunRequest:
    message_id: int
    director_id: int
    filter_id: int | None = None
    match: dict[str, Any] | None = None


def create_director(*, owner: Any, name: str, description: str = "", enabled: bool = True) -> Director:
    try:
        with transaction.atomic():
            return Director.objects.create(
                owner=owner, name=name.strip(), description=description.strip(), enabled=enabled
            )
    except IntegrityError as exc:
        raise DirectorNameTaken(f"You already have a director named {name!r}") from exc


def _runs_of_pairs(pairs: set[tuple[int, int]]) -> list[tuple[int, int, int, str, Any]]:
    """(pk, message id, director id, status, created_at) of the runs for these pairs. Looked up by message
    ids in chunks and matched in Python: an OR per pair would exceed SQL expression limits on big batches."""
    message_ids = sorted({message_id for message_id, _ in pairs})
    director_ids = sorted({director_id for _, director_id in pairs})
    rows: list[tuple[int, int, int, str, Any]] = []
    for start in range(0, len(message_ids), 500):
        rows.extend(
            Run.objects.filter(message_id__in=message_ids[start : start + 500], director_id__in=director_ids)
            .values_list("pk", "message_id", "director_id", "status", "created_at")
            .order_by("pk")
        )
    return [row for row in rows if (row[1], row[2]) in pairs]


def create_runs(*, requests: Sequence[RunRequest], fetch_cycle_id: int | None, trigger: str = "route") -> list[int]:
    """One run per (message, director), whoever calls first; returns the ids of runs this call created.

    The unique constraint makes repeated hooks and racing workers harmless: the losing insert is ignored.
    Every run still queued gets its task enqueued on commit; a duplicate enqueue finds it taken and stops.
    """
    wanted = {(r.message_id, r.director_id): r for r in requests}
    if not wanted:
        return []
    pairs = set(wanted)
    with transaction.atomic():
        existing = {(row[1], row[2]) for row in _runs_of_pairs(pairs)}
        fresh = {pair: request for pair, request in wanted.items() if pair not in existing}
        now = timezone.now()
        Run.objects.bulk_create(
            [
                Run(
                    message_id=r.message_id,
                    director_id=r.director_id,
                    filter_id=r.filter_id,
                    match=r.match or {},
                    fetch_cycle_id=fetch_cycle_id,
                    trigger=trigger,
                    created_at=now,
                )
                for r in fresh.values()
            ],
            ignore_conflicts=True,
            batch_size=500,
        )
        rows = _runs_of_pairs(pairs)
        # Ours are the fresh pairs stamped with our time; a racing worker's insert carries its own.
        created = [
            pk for pk, message_id, director_id, _s, at in rows if (message_id, director_id) in fresh and at == now
        ]
        queued = [pk for pk, _m, _d, status, _at in rows if status == RunStatus.QUEUED]
        transaction.on_commit(lambda: _enqueue_runs(queued))
    return created


def _enqueue_runs(run_ids: list[int]) -> None:
    for run_id in run_ids:
        async_task("apps.orchestration.tasks.run_director_task", run_id, task_name=f"run-{run_id}")


def _claim_sql(connection: Any) -> str:
    """`Run.objects.filter(pk=…, status=queued).update(status=running, started_at=…)` as SQL, built once per
    backend (the ORM compiled it for every run)."""
    sql = _CLAIM_SQL.get(connection.vendor)
    if sql is None:
        quote = connection.ops.quote_name
        status, started_at, pk = (
            quote(str(getattr(Run._meta.get_field(name), "column", name))) for name in ("status", "started_at", "id")
        )
        sql = _CLAIM_SQL[connection.vendor] = (
            f"UPDATE {quote(Run._meta.db_table)} SET {status} = %s, {started_at} = %s "  # noqa: S608
            f"WHERE {pk} = %s AND {status} = %s"
        )
    return sql


_CLAIM_SQL: dict[str, str] = {}


def claim_run(*, run_id: int) -> Run | None:
    """queued → running with one conditional UPDATE: exactly one worker gets the run."""
    connection = connections[router.db_for_write(Run)]
    started_at = Run._meta.get_field("started_at").get_db_prep_save(timezone.now(), connection)
    with connection.cursor() as cursor:
        params = [RunStatus.RUNNING.value, started_at, int(run_id), RunStatus.QUEUED.value]
        cursor.execute(_claim_sql(connection), params)
        taken = cursor.rowcount
    if not taken:
        return None
    # The director with what the engine needs of it, in the same query (the engine does not read it again).
    found = _CLAIMED_RUN(run_id=run_id)
    if not found:
        raise Run.DoesNotExist(f"run {run_id} is gone")
    return found[0]


_CLAIMED_RUN = PreparedQuery(
    Run,
    lambda run_id: Run.objects.select_related(
        "director__api_config", "director__prompt", "director__owner", "message"
    ).filter(pk=run_id),
    "run_id",
)


def finish_run(*, run: Run, status: str, reason: str = "", error: str = "") -> Run:
    run.status = status
    run.status_reason = reason
    run.error = error
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "status_reason", "error", "finished_at"])
    return run


def process_run(*, run_id: int) -> Run | None:
    """Execute one run if it is still queued. Returns the finished run, or None if another worker has it.

    The claim, the run's workspace and its director thread are stored in one transaction (one commit
    before the first model call; a kill before it leaves the run queued for reenqueue_queued_runs)."""
    from apps.orchestration.engine import RunEngine, execute_run

    run: Run | None = None
    try:
        with transaction.atomic():
            run = claim_run(run_id=run_id)
            if run is None:
                return None
            if not run.director.enabled:
                return finish_run(run=run, status=RunStatus.SKIPPED, reason="Director is disabled")
            engine = RunEngine(run)
            engine.start()
        return execute_run(run, engine)
    except Exception as exc:  # an engine bug must not leave the run "running" (or queued) forever
        if run is None:  # the claim itself failed: nothing was taken
            raise
        logger.exception("run %s crashed", run_id)
        from apps.orchestration.models import Conversation, ThreadStatus

        with transaction.atomic():  # nor its threads "ongoing"
            Conversation.objects.filter(run_id=run_id, status=ThreadStatus.ONGOING).update(
                status=ThreadStatus.FAILED, ended_at=timezone.now()
            )
            return finish_run(run=run, status=RunStatus.FAILED, error=f"{type(exc).__name__}: {exc}"[:4000])


class RunNotRetryable(ValueError):
    pass


def retry_run(*, run: Run) -> Run:
    """Put a failed or skipped run back in the queue (a new director thread; the workspace is kept)."""
    if run.status not in (RunStatus.FAILED, RunStatus.SKIPPED):
        raise RunNotRetryable(f"only failed or skipped runs can be retried (this one is {run.status})")
    run.status, run.status_reason, run.error = RunStatus.QUEUED, "", ""
    run.started_at = run.finished_at = None
    run.save(update_fields=["status", "status_reason", "error", "started_at", "finished_at"])
    transaction.on_commit(lambda: _enqueue_runs([run.pk]))
    return run


def _memory_target(*, scope: str, director: Director | None, agent: Agent | None) -> None:
    """Who a memory belongs to must fit its scope: global ones to no director, shared ones to a director
    (and all its agents), local ones to one agent or to the director itself (tools/memory.py reads them so)."""
    if scope not in MemoryScope.values:
        raise ValidationError({"scope": f"Unknown scope {scope!r}: global, shared or local."})
    if agent is not None and director is not None and agent.director_id != director.pk:
        raise ValidationError({"agent": f"Agent “{agent.name}” does not belong to director “{director.name}”."})
    if scope == MemoryScope.GLOBAL and (director is not None or agent is not None):
        raise ValidationError({"director" if agent is None else "agent": "A global memory belongs to no director."})
    if scope == MemoryScope.SHARED:
        if agent is not None:
            raise ValidationError({"agent": "A shared memory belongs to a director and all its agents, not one agent."})
        if director is None:
            raise ValidationError({"director": "A shared memory needs the director whose agents share it."})
    if scope == MemoryScope.LOCAL and director is None:
        raise ValidationError({"director": "A local memory needs its director (and, for an agent's, the agent)."})


def _memory_content(content: str) -> str:
    if not content.strip():
        raise ValidationError({"content": "A memory needs content."})
    return content.strip()


def create_memory(
    *,
    owner: Any,
    content: str,
    scope: str,
    director: Director | None = None,
    agent: Agent | None = None,
    tags: Sequence[str] = (),
) -> Memory:
    """A memory written by the user (the JSON API); an agent's memory also names its director."""
    if agent is not None and director is None:
        director = agent.director
    _memory_target(scope=scope, director=director, agent=agent)
    return Memory.objects.create(
        owner=owner, content=_memory_content(content), scope=scope, director=director, agent=agent, tags=list(tags)
    )


def edit_memory(
    *,
    memory: Memory,
    content: str,
    scope: str,
    director: Director | None,
    agent: Agent | None,
    tags: Sequence[str],
) -> Memory:
    """Replace what a memory says and whom it belongs to (checked like create_memory)."""
    if agent is not None and director is None:
        director = agent.director
    _memory_target(scope=scope, director=director, agent=agent)
    memory.content, memory.scope, memory.director, memory.agent = _memory_content(content), scope, director, agent
    memory.tags = list(tags)
    memory.updated_at = timezone.now()
    memory.save(update_fields=["content", "scope", "director", "agent", "tags", "updated_at"])
    return memory


def delete_memory(*, memory: Memory) -> None:
    memory.delete()


def delete_diagnostics_entries(*, user: Any, entry_ids: Sequence[int]) -> int:
    """Delete diagnostics (OrchLog) entries of the user's own runs; ids of other users' entries, or of
    entries already gone, are skipped. Returns how many were deleted. Only the audit trail goes: a run's
    transcript, provider events, workspace results and its page do not read these rows."""
    wanted = {int(pk) for pk in entry_ids}
    if not wanted:
        return 0
    deleted, _ = OrchLog.objects.filter(pk__in=wanted, director__owner=user).delete()
    return deleted


def requeue_stalled_runs(*, older_than_seconds: int | None = None) -> list[int]:
    """Runs left "running" by a worker that died (past the job time limit) go back to the queue; the
    threads of the dead attempt are closed as failed. The workspace is kept, so nothing made is lost."""
    from datetime import timedelta

    from django.conf import settings

    from apps.orchestration.models import Conversation, ThreadStatus

    limit = (
        older_than_seconds if older_than_seconds is not None else int(settings.Q_CLUSTER.get("timeout") or 1800) + 60
    )
    cutoff = timezone.now() - timedelta(seconds=limit)
    stalled = list(Run.objects.filter(status=RunStatus.RUNNING, started_at__lt=cutoff).values_list("pk", flat=True))
    if not stalled:
        return []
    with transaction.atomic():
        Conversation.objects.filter(run_id__in=stalled, status=ThreadStatus.ONGOING).update(
            status=ThreadStatus.FAILED, ended_at=timezone.now()
        )
        requeued = Run.objects.filter(pk__in=stalled, status=RunStatus.RUNNING).update(
            status=RunStatus.QUEUED, status_reason="requeued after the worker stopped", started_at=None
        )
        transaction.on_commit(lambda: _enqueue_runs(stalled))
    logger.warning("requeued %d stalled runs", requeued)
    return stalled


def reenqueue_queued_runs(*, older_than_seconds: int | None = None) -> list[int]:
    """Runs still queued long after they were created: their task was lost with a dead worker (a Redis
    broker keeps no copy of the tasks a cluster had taken) or never reached the broker. Enqueue them again;
    `claim_run` makes a surplus task a no-op, so a run is never executed twice."""
    from datetime import timedelta

    from django.conf import settings

    limit = (
        older_than_seconds if older_than_seconds is not None else int(settings.Q_CLUSTER.get("timeout") or 1800) + 60
    )
    cutoff = timezone.now() - timedelta(seconds=limit)
    waiting = list(
        Run.objects.filter(status=RunStatus.QUEUED, created_at__lte=cutoff).order_by("pk").values_list("pk", flat=True)
    )
    if waiting:
        _enqueue_runs(waiting)
        logger.warning("re-enqueued %d runs still queued after %d s", len(waiting), limit)
    return waiting


# --- approvals: what would reach other people waits for the user --------------------------------------

STALE_ATTEMPT_SECONDS = 120


class ApprovalError(ValueError):
    pass


def approval_comments(approval: Approval, request: dict[str, Any]) -> str:
    """The Inbox entry's markdown: what would be sent, to whom, and where to decide."""
    from django.urls import reverse

    body = json.dumps(request.get("json"), indent=2, ensure_ascii=False)
    people = ", ".join(approval.attendees)
    return (
        f"**Approval needed:** add “{approval.summary}” to the {approval.calendar} calendar of "
        f"{approval.account.name} and send invitations to {people}.\n\n"
        f"Nothing has been sent. [Review, approve or reject]({reverse('runs:approval', args=[approval.pk])}).\n\n"
        f"Request: `{request['method']} {request['path']}`\n\n```json\n{body}\n```\n"
    )


def request_calendar_approval(
    *, run: Run, workspace: Any, account: Any, request: dict[str, Any], attendees: Sequence[str]
) -> Approval:
    """Store the exact calendar request a tool would make, unperformed, and tell the user in the Inbox."""
    from apps.workspaces import actions as workspace_actions
    from apps.workspaces.models import EntrySource

    calendar = "primary" if request.get("api") == "calendar" else "default"
    with transaction.atomic():
        approval = Approval.objects.create(
            owner_id=workspace.owner_id,
            run=run,
            account=account,
            kind="calendar_event",
            provider=account.provider,
            calendar=calendar,
            summary=str((request.get("json") or {}).get("subject") or (request.get("json") or {}).get("summary"))[:300],
            attendees=list(attendees),
            request=request,
        )
        entry = workspace_actions.push_inbox_entry(
            workspace=workspace,
            comments=approval_comments(approval, request),
            source=EntrySource.DIRECTOR,
            run_id=run.pk,
        )
        approval.inbox_entry_id = entry.pk
        approval.save(update_fields=["inbox_entry_id"])
    return approval


MAIL_ACTION_WORDS = {
    "read": "mark as read",
    "unread": "mark as unread",
    "flag": "flag",
    "unflag": "remove the flag from",
    "archive": "archive",
    "trash": "move to Trash",
    "move": "move",
}


def mail_approval_summary(*, action: str, subject: str, folder: str = "") -> str:
    where = f" to {folder}" if action == "move" and folder else ""
    return f"{MAIL_ACTION_WORDS.get(action, action).capitalize()} “{subject or '(no subject)'}”{where}"[:300]


def request_mail_approval(*, run: Run, workspace: Any, message: Any, action: str, folder: str = "") -> Approval:
    """An agent's proposed change to a mail on the server, unperformed until the user approves it."""
    from django.urls import reverse

    from apps.workspaces import actions as workspace_actions
    from apps.workspaces.models import EntrySource

    summary = mail_approval_summary(action=action, subject=message.subject, folder=folder)
    request = {"action": action, "folder": folder, "message_id": message.pk}
    with transaction.atomic():
        approval = Approval.objects.create(
            owner_id=workspace.owner_id,
            run=run,
            account_id=message.account_id,
            kind="mail_action",
            provider=message.account.provider,
            summary=summary,
            request=request,
        )
        link = reverse("runs:approval", args=[approval.pk])
        entry = workspace_actions.push_inbox_entry(
            workspace=workspace,
            comments=(
                f"**Approval needed:** {summary} in {message.account.name}.\n\n"
                f"Nothing has changed on the server. [Review, approve or reject]({link})."
            ),
            source=EntrySource.DIRECTOR,
            run_id=run.pk,
        )
        approval.inbox_entry_id = entry.pk
        approval.save(update_fields=["inbox_entry_id"])
    return approval


def request_approval(
    *, owner: Any, workspace: Any, account: Any, kind: str, summary: str, request: dict[str, Any], comments: str
) -> Approval:
    """An approval that no run asked for (an outside agent, through the mailbox MCP endpoint): the exact
    request is stored unperformed and the owner's Inbox gets `comments` plus the link to decide."""
    if kind != "mail_action" and kind not in _PERFORMERS:
        raise ApprovalError(f"nothing performs approvals of kind {kind!r}")
    with transaction.atomic():
        approval = Approval.objects.create(
            owner=owner, account=account, kind=kind, provider=account.provider, summary=summary[:300], request=request
        )
        link = reverse("runs:approval", args=[approval.pk])
        entry = push_inbox_entry(
            workspace=workspace, comments=f"{comments}\n\n[Review, approve or reject]({link}).", source=EntrySource.MCP
        )
        approval.inbox_entry_id = entry.pk
        approval.save(update_fields=["inbox_entry_id"])
    return approval


# Kinds a higher layer performs (replies sends a reply draft), registered from its AppConfig.ready(): this
# layer stores and gates them, the owner of the action performs it. A performer returns the result to keep
# and raises ApprovalError (or anything else) when it could not be done.
ApprovalPerformer = Callable[[Approval], dict[str, Any]]
_PERFORMERS: dict[str, ApprovalPerformer] = {}


def register_approval_performer(kind: str, perform: ApprovalPerformer) -> None:
    _PERFORMERS[kind] = perform


def _perform_guarded(
    claimed: Approval, perform: Callable[[Approval], Any], expected: tuple[type[Exception], ...]
) -> Approval:
    """Run a claimed approval's side effect (slow I/O, outside any transaction) and record how it ended: an
    expected failure or any other error leaves it failed with the reason (never "sending"), else done."""
    try:
        result = perform(claimed)
    except expected as exc:
        claimed.status, claimed.error = ApprovalStatus.FAILED, str(exc)[:2000]
        claimed.save(update_fields=["status", "error"])
        return claimed
    except Exception as exc:  # never leave it "sending": the user sees the reason and may retry
        logger.exception("approval %s failed", claimed.pk)
        claimed.status, claimed.error = ApprovalStatus.FAILED, f"{type(exc).__name__}: {exc}"[:2000]
        claimed.save(update_fields=["status", "error"])
        return claimed
    claimed.status, claimed.error, claimed.performed_at = ApprovalStatus.DONE, "", timezone.now()
    claimed.result = result
    claimed.save(update_fields=["status", "error", "performed_at", "result"])
    return claimed


def _perform_tool_request(claimed: Approval) -> dict[str, Any]:
    from apps.orchestration.tools.calendar import perform_request  # as before: the tools import these actions

    created = perform_request(claimed.account, dict(claimed.request or {}))
    return {"id": created.get("id"), "link": created.get("webLink") or created.get("htmlLink") or ""}


def _perform_mail_approval(claimed: Approval) -> Approval:
    """Hand an approved mail change to the accounts' write-back ledger (which does it at the provider)."""
    from apps.accounts.models import Message
    from apps.accounts.writeback import MailActionRefused, request_mail_actions

    request = dict(claimed.request or {})
    # One message (a director's proposal) or several (an outside agent's request_action).
    wanted = [int(pk) for pk in request.get("message_ids") or [request.get("message_id") or 0]]
    found = list(Message.objects.filter(pk__in=wanted, account_id=claimed.account_id).order_by("pk"))
    try:
        if not found:
            raise MailActionRefused("the email no longer exists here")
        recorded = request_mail_actions(
            messages=found,
            kind=str(request.get("action")),
            folder=str(request.get("folder") or ""),
            requested_by=claimed.owner,
            origin="approval",
        )
    except MailActionRefused as exc:
        claimed.status, claimed.error = ApprovalStatus.FAILED, str(exc)[:2000]
        claimed.save(update_fields=["status", "error"])
        return claimed
    claimed.status, claimed.error, claimed.performed_at = ApprovalStatus.DONE, "", timezone.now()
    claimed.result = {"mail_actions": [action.pk for action in recorded]}
    claimed.save(update_fields=["status", "error", "performed_at", "result"])
    return claimed


def reject_approval(*, approval: Approval) -> Approval:
    with transaction.atomic():
        locked = Approval.objects.select_for_update().get(pk=approval.pk)
        if locked.status == ApprovalStatus.REJECTED:
            return locked
        if locked.status != ApprovalStatus.PENDING:
            raise ApprovalError(f"it can no longer be rejected: it is {locked.get_status_display().lower()}")
        locked.status, locked.decided_at = ApprovalStatus.REJECTED, timezone.now()
        locked.save(update_fields=["status", "decided_at"])
    return locked


def _claim_approval(approval_id: int) -> Approval | None:
    """pending/failed (or an attempt that died) → sending, once: the returned row is ours to perform; None
    when it is already performed or being performed (a double click performs once)."""
    now = timezone.now()
    with transaction.atomic():
        locked = Approval.objects.select_for_update().select_related("account").get(pk=approval_id)
        if locked.status == ApprovalStatus.DONE:
            return None
        if locked.status == ApprovalStatus.REJECTED:
            raise ApprovalError("it was rejected; nothing will be sent")
        if locked.status == ApprovalStatus.SENDING:
            started = locked.attempt_started_at
            if started and (now - started).total_seconds() < STALE_ATTEMPT_SECONDS:
                return None
        locked.status, locked.attempt_started_at = ApprovalStatus.SENDING, now
        locked.decided_at = locked.decided_at or now
        locked.attempts += 1
        locked.save(update_fields=["status", "attempt_started_at", "decided_at", "attempts"])
    return locked


def approve(*, approval: Approval) -> Approval:
    """Perform the stored request exactly as shown. Idempotent: a performed approval is not performed again.
    A provider failure is kept with its reason and the approval can be retried."""
    from apps.llm import ToolFailure

    claimed = _claim_approval(approval.pk)
    if claimed is None:
        return Approval.objects.get(pk=approval.pk)
    if claimed.kind == "mail_action":
        return _perform_mail_approval(claimed)
    if claimed.kind in _PERFORMERS:
        return _perform_guarded(claimed, _PERFORMERS[claimed.kind], (ApprovalError,))
    return _perform_guarded(claimed, _perform_tool_request, (ToolFailure,))


# --- the prompt playground ---------------------------------------------------------------------------

MAX_PROMPT_MESSAGES = 50
MAX_MESSAGE_CHARS = 50_000
PROMPT_NEEDS_NAME = "the prompt needs a name"


class PromptInvalid(ValueError):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def check_prompt_messages(messages: Sequence[tuple[str, str]]) -> list[str]:
    """What is wrong with a message list, in words (empty when it can be saved)."""
    from apps.orchestration.models import ROLE_CHOICES
    from apps.orchestration.prompts import resolve_blocks, unknown_variables

    roles = {value for value, _label in ROLE_CHOICES}
    problems: list[str] = []
    if len(messages) > MAX_PROMPT_MESSAGES:
        problems.append(f"a prompt has at most {MAX_PROMPT_MESSAGES} messages")
    for number, (role, content) in enumerate(messages, start=1):
        if role not in roles:
            problems.append(f"message {number}: unknown role {role!r}")
        if not content.strip():
            problems.append(f"message {number} is empty")
        if len(content) > MAX_MESSAGE_CHARS:
            problems.append(f"message {number} is longer than {MAX_MESSAGE_CHARS} characters")
        unknown = unknown_variables(content)
        if unknown:
            names = ", ".join("{{" + name + "}}" for name in unknown)
            problems.append(f"message {number}: unknown variable{'s' if len(unknown) > 1 else ''} {names}")
    if all(role in roles for role, _content in messages):
        # A tool message the model would never be sent (no call before it) is refused like an unknown variable.
        for number, block in enumerate(resolve_blocks(list(messages), {}), start=1):
            if block.message is None:
                problems.append(f"message {number} (tool) is {block.note}")
    return problems


def save_prompt(*, prompt: Any, name: str, is_template: bool, messages: Sequence[tuple[str, str]]) -> Any:
    """Replace a prompt's messages (in the given order) and its name; nothing is stored when any is invalid."""
    from apps.orchestration.models import PromptMessage

    problems = check_prompt_messages(messages)
    if not name.strip():
        problems.insert(0, PROMPT_NEEDS_NAME)
    if problems:
        raise PromptInvalid(problems)
    with transaction.atomic():
        prompt.name, prompt.is_template = name.strip()[:150], is_template
        prompt.save(update_fields=["name", "is_template"])
        PromptMessage.objects.filter(prompt=prompt).delete()
        PromptMessage.objects.bulk_create(
            [
                PromptMessage(prompt=prompt, order=order, role=role, content=content)
                for order, (role, content) in enumerate(messages)
            ]
        )
    return prompt


def duplicate_prompt(*, prompt: Any, as_template: bool) -> Any:
    from apps.orchestration.config_actions import create_prompt

    messages = [(m.role, m.content) for m in prompt.messages.order_by("order", "pk")]
    name = f"{prompt.name} (template)" if as_template else f"Copy of {prompt.name}"
    return create_prompt(owner=prompt.owner, name=name, messages=messages, is_template=as_template)


@dataclass(slots=True)
class TryResult:
    reply: str
    error: str
    latency_ms: int | None
    usage: dict[str, int]


def try_prompt(*, prompt: Any, api_config: Any, messages: list[dict[str, Any]]) -> TryResult:
    """Send the resolved messages once to the chosen model (no tools, no retries); every request, response
    and error is stored as a ProviderEvent of the prompt."""
    import dataclasses

    from apps.llm import LLMError, ProviderEventData, chat
    from apps.llm.configs import llm_config
    from apps.orchestration.models import ProviderEvent

    recorded: list[ProviderEvent] = []

    def sink(event: ProviderEventData) -> None:
        recorded.append(ProviderEvent.from_data(event, prompt=prompt))

    try:
        result = chat(dataclasses.replace(llm_config(api_config), max_retries=0), messages, events=sink)
    except LLMError as exc:
        outcome = TryResult(reply="", error=str(exc), latency_ms=None, usage={})
    else:
        outcome = TryResult(reply=result.content or "", error="", latency_ms=result.latency_ms, usage=result.usage)
    ProviderEvent.objects.bulk_create(recorded)
    return outcome
