"""Reads for the Results page: the email → director run → item tree, one node of it, and the notification
events since a cursor. Owner-scoped throughout (another user's ids are 404); constant query counts."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.db.models import BooleanField, Expression, F, Max, Prefetch, Q, QuerySet
from django.http import Http404
from django.utils import timezone

from apps.accounts.models import Attachment, MailAccount, Message
from apps.orchestration import selectors as run_selectors
from apps.orchestration.models import Director, Run, RunStatus
from apps.results.events import NOTIFIED_RUN_STATUSES, ResultEvent, inbox_event, run_event
from apps.results.models import NotificationPreference
from apps.workspaces.models import CreatedBy, InboxEntry, Workspace, WorkspaceItem, WorkspaceItemLog

TREE_EMAILS = 50  # emails per tree page
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
TREE_MAX_EMAILS = 1000  # a live refresh keeps the pages already loaded, up to this many emails
# Tree rows never need an item's payload (up to 5 MB) or the message bodies.
ITEM_ROW_FIELDS = ("pk", "workspace_id", "label", "mime_type", "encoding", "tags", "created_by", "created", "revision")
MESSAGE_HEAVY_FIELDS = ("message__body_text", "message__body_html", "message__raw_headers", "message__references")


@dataclass(frozen=True, slots=True)
class ResultFilters:
    account: int | None = None
    director: int | None = None
    status: str = ""
    tag: str = ""
    author: str = ""
    mime: str = ""  # items of this type only (text/markdown, image/png, …)
    q: str = ""
    deleted: bool = False  # "Deleted items": soft-deleted items (to restore) instead of live ones

    @classmethod
    def from_query(cls, query: Any) -> ResultFilters:
        def number(name: str) -> int | None:
            raw = str(query.get(name) or "").strip()
            return int(raw) if raw.isdigit() else None

        status = str(query.get("status") or "").strip()
        author = str(query.get("author") or "").strip()
        return cls(
            account=number("account"),
            director=number("director"),
            status=status if status in RunStatus.values else "",
            tag=str(query.get("tag") or "").strip()[:100],
            author=author if author in CreatedBy.values else "",
            mime=str(query.get("type") or "").strip()[:255],
            q=str(query.get("q") or "").strip()[:200],
            deleted=str(query.get("show") or "") == "deleted",
        )

    @property
    def active(self) -> bool:
        return any((self.account, self.director, self.status, self.tag, self.author, self.mime, self.q, self.deleted))

    @property
    def filters_items(self) -> bool:
        return bool(self.tag or self.author or self.mime or self.deleted)


@dataclass(slots=True)
class RunNode:
    run: Run
    items: list[WorkspaceItem] = field(default_factory=list)


@dataclass(slots=True)
class EmailNode:
    message: Message
    cursor: str = ""  # its place in the tree: "<latest run time in µs>.<message id>"
    runs: list[RunNode] = field(default_factory=list)

    @property
    def item_count(self) -> int:
        return sum(len(run.items) for run in self.runs)


@dataclass(slots=True)
class Tree:
    emails: list[EmailNode]
    next_cursor: str  # older emails exist: the cursor of the last one shown ("" when this is the end)
    active: bool  # some run is queued or running: the page keeps polling
    through: str = ""  # the refresh kept the pages loaded down to this cursor
    top: str = ""  # the end of the first page: a live refresh re-reads down to here, older pages stay as shown

    @property
    def truncated(self) -> bool:
        return bool(self.next_cursor)


class BadTreeCursor(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class TreeCursor:
    """A place in the tree (keyset, not OFFSET): an email's latest matching run time and its message id."""

    latest: dt.datetime
    message_id: int

    def __str__(self) -> str:
        return f"{(self.latest - EPOCH) // dt.timedelta(microseconds=1)}.{self.message_id}"

    @classmethod
    def parse(cls, raw: str | None) -> TreeCursor | None:
        if not raw:
            return None
        micros, _, message_id = raw.partition(".")
        if not (micros.isdigit() and message_id.isdigit() and len(raw) <= 40):
            raise BadTreeCursor(f"a tree cursor looks like 1700000000000000.42, not {raw[:40]!r}")
        try:
            return cls(latest=EPOCH + dt.timedelta(microseconds=int(micros)), message_id=int(message_id))
        except OverflowError:
            raise BadTreeCursor(f"tree cursor out of range: {raw[:40]!r}") from None


class TagListContains(Expression):
    """`tags` (a JSON list) holds this exact string, evaluated by the database so a tag filter pages like the
    others: PostgreSQL jsonb containment, SQLite's json_each."""

    output_field = BooleanField()
    conditional = True

    def __init__(self, column: str, tag: str) -> None:
        super().__init__()
        self.column: Any = F(column)
        self.tag = tag

    def get_source_expressions(self) -> list[Any]:
        return [self.column]

    def set_source_expressions(self, exprs: Any) -> None:
        (self.column,) = exprs

    def resolve_expression(self, *args: Any, **kwargs: Any) -> Any:
        clone = self.copy()
        clone.column = self.column.resolve_expression(*args, **kwargs)
        return clone

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        column_sql, params = compiler.compile(self.column)
        if connection.vendor == "postgresql":
            return f"({column_sql} @> jsonb_build_array(%s::text))", (*params, self.tag)
        # column_sql is compiled by Django; the tag is a parameter.
        sql = f"EXISTS (SELECT 1 FROM json_each({column_sql}) AS tag WHERE tag.type = 'text' AND tag.value = %s)"  # noqa: S608
        return sql, (*params, self.tag)


def filtered_runs(*, user: Any, filters: ResultFilters) -> QuerySet[Run]:
    runs = Run.objects.filter(director__owner=user)
    if filters.account:
        runs = runs.filter(message__account_id=filters.account)
    if filters.director:
        runs = runs.filter(director_id=filters.director)
    if filters.status:
        runs = runs.filter(status=filters.status)
    if filters.q:
        q = filters.q
        labelled = WorkspaceItem.objects.filter(
            Q(label__icontains=q) | Q(path__icontains=q), workspace__owner=user, deleted=filters.deleted
        ).values("workspace__run_id")
        runs = runs.filter(
            Q(message__subject__icontains=q)
            | Q(message__from_name__icontains=q)
            | Q(message__from_address__icontains=q)
            | Q(director__name__icontains=q)
            | Q(pk__in=labelled)
        )
    return runs


def _item_matches(item: WorkspaceItem, filters: ResultFilters) -> bool:
    if filters.author and item.created_by != filters.author:
        return False
    if filters.mime and item.mime_type != filters.mime:
        return False
    return not filters.tag or (isinstance(item.tags, list) and filters.tag in item.tags)


def results_tree(
    *,
    user: Any,
    filters: ResultFilters,
    emails: int | None = None,
    before: TreeCursor | None = None,
    through: TreeCursor | None = None,
) -> Tree:
    """One page of emails (newest run first) → their runs (newest first) → live items (newest first), or with
    `filters.deleted` only the runs with soft-deleted items and those items. `before`: the page after that
    cursor ("Show older emails"); `through`: every email down to that cursor (a live refresh keeping the pages
    already loaded, at most TREE_MAX_EMAILS). Four queries per page whatever the filters."""
    matching = filtered_runs(user=user, filters=filters)
    if filters.filters_items:
        chosen = WorkspaceItem.objects.filter(workspace__owner=user, deleted=filters.deleted)
        if filters.author:
            chosen = chosen.filter(created_by=filters.author)
        if filters.mime:
            chosen = chosen.filter(mime_type=filters.mime)
        if filters.tag:
            chosen = chosen.filter(TagListContains("tags", filters.tag))
        matching = matching.filter(pk__in=chosen.values("workspace__run_id"))
    rows = matching.select_related("message", "message__account", "director").defer(*MESSAGE_HEAVY_FIELDS)
    newest = matching.values("message_id").annotate(latest=Max("created_at"))
    if before is not None:
        newest = newest.filter(Q(latest__lt=before.latest) | Q(latest=before.latest, message_id__lt=before.message_id))
    limit = TREE_MAX_EMAILS if through is not None else (emails or TREE_EMAILS)
    keys = list(newest.order_by("-latest", "-message_id").values_list("message_id", "latest")[: limit + 1])
    more = len(keys) > limit
    keys = keys[:limit]
    if through is not None:
        # Whatever was loaded down to `through` (and what arrived since), in the one query: cut where it ended.
        kept = [key for key in keys if (key[1], key[0]) >= (through.latest, through.message_id)]
        more = more or len(kept) < len(keys)
        keys = kept
    cursors = {message_id: str(TreeCursor(latest=latest, message_id=message_id)) for message_id, latest in keys}
    runs = list(rows.filter(message_id__in=list(cursors)).order_by("-created_at", "-pk"))
    workspaces: dict[int, Any] = dict(
        Workspace.objects.filter(owner=user, run_id__in=[run.pk for run in runs]).values_list("pk", "run_id")
    )
    items_by_run: dict[int, list[WorkspaceItem]] = {}
    live = WorkspaceItem.objects.filter(workspace_id__in=list(workspaces), deleted=filters.deleted)
    if filters.author:
        live = live.filter(created_by=filters.author)
    if filters.mime:
        live = live.filter(mime_type=filters.mime)
    for item in live.only(*ITEM_ROW_FIELDS).order_by("-created", "-pk"):
        if _item_matches(item, filters):
            items_by_run.setdefault(workspaces[item.workspace_id], []).append(item)
    by_message: dict[int, list[RunNode]] = {}
    messages: dict[int, Message] = {}
    for run in runs:
        messages[run.message_id] = run.message
        by_message.setdefault(run.message_id, []).append(RunNode(run=run, items=items_by_run.get(run.pk, [])))
    shown = [
        EmailNode(message=messages[message_id], cursor=cursors[message_id], runs=by_message[message_id])
        for message_id, _ in keys
        if message_id in by_message
    ]
    active = any(run.status in (RunStatus.QUEUED, RunStatus.RUNNING) for run in runs)
    return Tree(
        emails=shown,
        next_cursor=shown[-1].cursor if more and shown else "",
        active=active,
        # Past the first page: the refresh keeps everything down to here (or to where an empty page began).
        through=(shown[-1].cursor if shown else str(through or before)) if (through or before) else "",
        top=shown[min(len(shown), emails or TREE_EMAILS) - 1].cursor if shown else "",
    )


MAX_TYPE_CHOICES = 50


def filter_choices(*, user: Any) -> dict[str, Any]:
    return {
        "accounts": list(MailAccount.objects.filter(owner=user).order_by("name").values_list("pk", "name")),
        "directors": list(Director.objects.filter(owner=user).order_by("name").values_list("pk", "name")),
        "statuses": RunStatus.choices,
        "authors": CreatedBy.choices,
        "types": list(
            WorkspaceItem.objects.filter(workspace__owner=user)
            .order_by("mime_type")
            .values_list("mime_type", flat=True)
            .distinct()[:MAX_TYPE_CHOICES]
        ),
    }


# --- nodes --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class EmailPane:
    message: Message
    runs: list[RunNode]


def email_pane(*, user: Any, message_id: int) -> EmailPane:
    """An email with at least one of the user's runs, and every live item those runs made (404 otherwise)."""
    message = (
        Message.objects.select_related("account")
        .prefetch_related(Prefetch("attachments", queryset=Attachment.objects.order_by("pk")))
        .filter(pk=message_id, account__owner=user)
        .first()
    )
    if message is None:
        raise Http404("No such email")
    runs = list(
        Run.objects.filter(message=message, director__owner=user).select_related("director").order_by("-created_at")
    )
    if not runs:
        raise Http404("No results for this email")
    workspaces: dict[int, Any] = dict(
        Workspace.objects.filter(owner=user, run_id__in=[r.pk for r in runs]).values_list("pk", "run_id")
    )
    by_run: dict[int, list[WorkspaceItem]] = {}
    for item in WorkspaceItem.objects.filter(workspace_id__in=list(workspaces), deleted=False).order_by("-created"):
        by_run.setdefault(workspaces[item.workspace_id], []).append(item)
    return EmailPane(message=message, runs=[RunNode(run=run, items=by_run.get(run.pk, [])) for run in runs])


@dataclass(slots=True)
class RunPane:
    run: Run
    threads: list[dict[str, Any]]
    items: list[WorkspaceItem]


def run_pane(*, user: Any, run_id: int) -> RunPane:
    run = run_selectors.access_run(user=user, run_id=run_id)
    threads = [
        {"thread": thread, "entries": [e for e in run_selectors.transcript(thread) if e.content or e.tool_calls]}
        for thread in run_selectors.run_threads(run=run)
    ]
    items = list(
        WorkspaceItem.objects.filter(workspace__run_id=run.pk, workspace__owner=user, deleted=False)
        .only(*ITEM_ROW_FIELDS, "description", "path")
        .order_by("-created", "-pk")
    )
    return RunPane(run=run, threads=threads, items=items)


@dataclass(slots=True)
class ItemPane:
    item: WorkspaceItem
    run: Run | None
    revisions: list[WorkspaceItemLog]
    supersedes: list[WorkspaceItem]  # earlier items of the workspace at the same path, newest first


def access_item(*, user: Any, item_id: int, include_deleted: bool = False) -> WorkspaceItem:
    items = WorkspaceItem.objects.select_related("workspace").filter(pk=item_id, workspace__owner=user)
    item = (items if include_deleted else items.filter(deleted=False)).first()
    if item is None:
        raise Http404("No such item")
    return item


def item_pane(*, user: Any, item_id: int) -> ItemPane:
    """A live item, or a soft-deleted one (shown as deleted, with Restore)."""
    item = access_item(user=user, item_id=item_id, include_deleted=True)
    run = None
    if item.workspace.run_id is not None:
        run = Run.objects.select_related("director", "message").filter(pk=item.workspace.run_id).first()
    revisions = list(WorkspaceItemLog.objects.filter(workspace_id=item.workspace_id, item_id=item.pk).order_by("at"))
    supersedes: list[WorkspaceItem] = []
    if item.path:
        supersedes = list(
            WorkspaceItem.objects.filter(workspace_id=item.workspace_id, path=item.path, created__lte=item.created)
            .exclude(pk=item.pk)
            .only(*ITEM_ROW_FIELDS, "path", "deleted", "updated")
            .order_by("-created", "-pk")
        )
    return ItemPane(item=item, run=run, revisions=revisions, supersedes=supersedes)


# --- deletion -----------------------------------------------------------------------------------------


def items_for_nodes(*, user: Any, nodes: list[str], deleted: bool = False) -> QuerySet[WorkspaceItem]:
    """The user's live (or with `deleted`, soft-deleted) items under tree nodes ("email-3", "run-7", "item-12");
    unknown or foreign ids add nothing."""
    wanted = Q(pk__in=[])
    for node in nodes:
        kind, _, raw = str(node).partition("-")
        if not raw.isdigit():
            continue
        number = int(raw)
        if kind == "item":
            wanted |= Q(pk=number)
        elif kind == "run":
            wanted |= Q(workspace__run_id=number)
        elif kind == "email":
            wanted |= Q(workspace__message_id=number, workspace__run_id__isnull=False)
    return WorkspaceItem.objects.filter(wanted, workspace__owner=user, deleted=deleted)


def items_for_filters(*, user: Any, filters: ResultFilters) -> QuerySet[WorkspaceItem]:
    """Every item the tree shows under these filters (not only its first page): live, or the deleted ones."""
    run_ids = filtered_runs(user=user, filters=filters).values("pk")
    items = WorkspaceItem.objects.filter(workspace__owner=user, workspace__run_id__in=run_ids, deleted=filters.deleted)
    if filters.author:
        items = items.filter(created_by=filters.author)
    if filters.mime:
        items = items.filter(mime_type=filters.mime)
    if filters.tag:
        items = items.filter(TagListContains("tags", filters.tag))
    return items


# --- notifications ------------------------------------------------------------------------------------

# A run that committed a moment after a poll read the database still carries a finished_at before that poll's
# cursor; the window re-reads that far back and browsers de-duplicate by event id.
CURSOR_OVERLAP = dt.timedelta(seconds=30)
MAX_EVENTS = 50


class BadCursor(ValueError):
    pass


def parse_since(raw: str | None) -> dt.datetime | None:
    if not raw:
        return None
    try:
        return EPOCH + dt.timedelta(milliseconds=int(raw))
    except (ValueError, OverflowError):
        raise BadCursor(f"since must be a timestamp in milliseconds, not {raw[:40]!r}") from None


def preference_for(*, user: Any) -> NotificationPreference:
    found = NotificationPreference.objects.filter(user=user).first()
    return found or NotificationPreference(user=user)


def events_since(*, user: Any, since: dt.datetime | None) -> tuple[int, list[ResultEvent]]:
    """(the next cursor, events from database state): runs that completed or failed and Inbox entries since
    the cursor (minus the overlap window), oldest first. Without a cursor, the events of the overlap window
    before now: a new client records them as already known, so its next poll does not announce them."""
    now = timezone.now()
    cursor = int((now - EPOCH).total_seconds() * 1000)
    start = (since or now) - CURSOR_OVERLAP
    runs = (
        Run.objects.filter(director__owner=user, finished_at__gte=start, status__in=list(NOTIFIED_RUN_STATUSES))
        .values_list("pk", "status", "message_id", "message__subject", "director__name", "finished_at")
        .order_by("finished_at", "pk")[:MAX_EVENTS]
    )
    events: list[ResultEvent] = [
        run_event(
            run_id=pk, status=status, message_id=message_id, subject=subject or "", director=director, finished_at=at
        )
        for pk, status, message_id, subject, director, at in runs
    ]
    entries = (
        InboxEntry.objects.filter(owner=user, created__gte=start)
        .values_list("pk", "workspace_label", "comments", "run_id", "created")
        .order_by("created", "pk")[:MAX_EVENTS]
    )
    events += [
        inbox_event(entry_id=str(pk), label=label, comments=comments, run_id=run_id, created=created)
        for pk, label, comments, run_id, created in entries
    ]
    events.sort(key=lambda event: event["at"])
    return cursor, events
