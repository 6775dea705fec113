"""Writes to workspaces. Revisions make concurrent edits safe: an update with a stale expectedRevision
fails with RevisionConflict (the API answers 409 with the current revision) and changes nothing."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from apps.accounts import selectors as account_selectors
from apps.workspaces import events, hooks
from apps.workspaces.models import (
    CreatedBy,
    Encoding,
    EntrySource,
    InboxEntry,
    ItemAction,
    MailboxToken,
    McpCall,
    McpScope,
    Workspace,
    WorkspaceItem,
    WorkspaceItemLog,
    WorkspaceToken,
)
from mailagent.bulk import insert_rows

MAX_ITEM_BYTES = 5 * 1024 * 1024
MAX_PATH_CHARS = 500
PATCHABLE = ("label", "description", "mime_type", "encoding", "data", "tags", "path")
# The spec's item field names (API and tools) → model fields.
SPEC_FIELDS = {
    "label": "label",
    "description": "description",
    "mimeType": "mime_type",
    "encoding": "encoding",
    "data": "data",
    "tags": "tags",
    "path": "path",
}


class WorkspaceError(ValueError):
    pass


class RevisionConflict(WorkspaceError):
    def __init__(self, item: WorkspaceItem, expected: int) -> None:
        super().__init__(f"revision conflict: expected {expected}, current is {item.revision}")
        self.current_revision = item.revision
        self.item = item


def clean_path(value: Any) -> str | None:
    """A workspace path as stored: relative, '/'-separated, no '.' or '..' parts; '' or None → no path."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise WorkspaceError("path must be a string")
    cleaned = value.strip().replace("\\", "/")
    if not cleaned:
        return None
    if "\x00" in cleaned or any(ord(ch) < 32 for ch in cleaned):
        raise WorkspaceError("path must not contain control characters")
    if cleaned.startswith("/"):
        raise WorkspaceError(f"path {value!r} must be relative to the workspace (no leading '/')")
    parts = [part for part in cleaned.split("/") if part]
    if any(part in (".", "..") for part in parts):
        raise WorkspaceError(f"path {value!r} must not contain '.' or '..' parts")
    normalized = "/".join(parts)
    if len(normalized) > MAX_PATH_CHARS:
        raise WorkspaceError(f"path is longer than {MAX_PATH_CHARS} characters")
    return normalized


def _path_taken(workspace: Workspace, path: str, *, exclude_id: int | None = None) -> bool:
    live = WorkspaceItem.objects.filter(workspace=workspace, path=path, deleted=False)
    if exclude_id is not None:
        live = live.exclude(pk=exclude_id)
    return live.exists()


def _path_conflict(path: str) -> WorkspaceError:
    return WorkspaceError(f"path {path!r} is already used by another item of this workspace")


def open_workspace(
    *,
    owner: Any,
    run_id: int | None,
    message_id: int | None,
    director_id: int | None,
    director_name: str,
    title: str,
) -> Workspace:
    """One workspace per run (create or get, so a retried run reuses it). The insert comes first: a run's
    first attempt, by far the most common case, then costs one statement; run_id is unique."""
    fields = {
        "owner": owner,
        "run_id": run_id,
        "message_id": message_id,
        "director_id": director_id,
        "director_name": director_name[:100],
        "title": title[:300],
        "label": (f"{title} — {director_name}" if title and director_name else title or director_name)[:300],
    }
    if run_id is None:
        return Workspace.objects.create(**fields)
    workspace = Workspace(**fields)
    try:
        with transaction.atomic():
            insert_rows([workspace])  # as create() stores it (no signal listens to workspaces), without its compiler
    except IntegrityError:
        return Workspace.objects.get(run_id=run_id)
    return workspace


def create_user_workspace(*, owner: Any, label: str) -> Workspace:
    """A workspace of the user's own, for an outside agent (Claude Desktop, a coding agent, a script)."""
    if not isinstance(label, str) or not label.strip():
        raise WorkspaceError("a workspace needs a label (it heads every Inbox entry from it)")
    label = label.strip()
    if len(label) > 300:
        raise WorkspaceError("the label is longer than 300 characters")
    return Workspace.objects.create(owner=owner, title=label, label=label)


def patch_from_spec(patch: Mapping[str, Any]) -> dict[str, Any]:
    """A patch in the spec's names (mimeType …) as model fields; unknown names are an error."""
    unknown = set(patch) - set(SPEC_FIELDS)
    if unknown:
        raise WorkspaceError(f"cannot patch {', '.join(sorted(unknown))}; patchable: {', '.join(SPEC_FIELDS)}")
    return {SPEC_FIELDS[name]: value for name, value in patch.items()}


TEXT_LIMITS = {"label": 300, "mime_type": 255, "description": None, "data": None}


def _validate_payload(*, encoding: str, data: str, tags: Any, texts: Mapping[str, Any] | None = None) -> None:
    for name, value in {"data": data, **(texts or {})}.items():
        if not isinstance(value, str):
            raise WorkspaceError(f"{name} must be a string")
        limit = TEXT_LIMITS.get(name)
        if limit is not None and len(value) > limit:
            raise WorkspaceError(f"{name} is longer than {limit} characters")
    if encoding not in Encoding.values:
        raise WorkspaceError(f"encoding must be one of {', '.join(Encoding.values)}")
    if encoding == Encoding.BASE64:
        try:
            raw = base64.b64decode(data.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError):
            raise WorkspaceError("data is not valid base64") from None
        size = len(raw)
    else:
        size = len(data.encode("utf-8"))
    if size > MAX_ITEM_BYTES:
        raise WorkspaceError(f"item is {size} bytes; the limit is {MAX_ITEM_BYTES}")
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise WorkspaceError("tags must be a list of strings")


def _log(item: WorkspaceItem, action: str, actor: Mapping[str, Any]) -> None:
    # mailagent.bulk stores the row as create() would (no signal listens to item logs), without its compiler.
    insert_rows(
        [
            WorkspaceItemLog(
                workspace_id=item.workspace_id,
                item_id=item.pk,
                action=action,
                revision=item.revision,
                actor=dict(actor),
            )
        ]
    )


def add_item(
    *,
    workspace: Workspace,
    data: str = "",
    label: str = "",
    description: str = "",
    mime_type: str = "text/plain",
    encoding: str = Encoding.UTF8,
    tags: list[str] | None = None,
    context: Mapping[str, Any] | None = None,
    created_by: str = CreatedBy.DIRECTOR,
    path: str | None = None,
) -> WorkspaceItem:
    tags = list(tags or [])
    _validate_payload(encoding=encoding, data=data, tags=tags)
    if created_by not in CreatedBy.values:
        raise WorkspaceError(f"createdBy must be one of {', '.join(CreatedBy.values)}")
    clean = clean_path(path)
    now = timezone.now()
    context = {**(context or {}), "createdBy": created_by}
    try:
        with transaction.atomic():
            if clean is not None and _path_taken(workspace, clean):
                raise _path_conflict(clean)
            item = _create_item(
                workspace=workspace,
                label=label,
                description=description,
                mime_type=mime_type,
                encoding=encoding,
                data=data,
                tags=tags,
                now=now,
                context=context,
                created_by=created_by,
                path=clean,
            )
    except IntegrityError:  # a concurrent add took the path between the check and the insert
        raise _path_conflict(clean or "") from None
    return item


def _create_item(
    *,
    workspace: Workspace,
    label: str,
    description: str,
    mime_type: str,
    encoding: str,
    data: str,
    tags: list[str],
    now: Any,
    context: dict[str, Any],
    created_by: str,
    path: str | None,
) -> WorkspaceItem:
    """The item and its log row (the caller's transaction holds both; a director adds items on its hot path,
    so the rows go through mailagent.bulk.insert_rows, as bulk_create would store them)."""
    item = WorkspaceItem(
        workspace=workspace,
        label=label[:300],
        description=description,
        mime_type=(mime_type or "text/plain")[:255],
        encoding=encoding,
        data=data,
        tags=tags,
        created=now,
        updated=now,
        context=context,
        created_by=created_by,
        path=path,
    )
    insert_rows([item])
    _log(item, ItemAction.ADD, context)
    return item


def update_item(
    *,
    item_id: int,
    workspace: Workspace,
    patch: Mapping[str, Any],
    expected_revision: int | None,
    actor: Mapping[str, Any],
) -> WorkspaceItem:
    unknown = set(patch) - set(PATCHABLE)
    if unknown:
        raise WorkspaceError(f"cannot patch {', '.join(sorted(unknown))}; patchable: {', '.join(PATCHABLE)}")
    patch = dict(patch)
    if "path" in patch:
        patch["path"] = clean_path(patch["path"])
    try:
        return _update_item(
            item_id=item_id, workspace=workspace, patch=patch, expected_revision=expected_revision, actor=actor
        )
    except IntegrityError:
        raise _path_conflict(str(patch.get("path"))) from None


def _update_item(
    *,
    item_id: int,
    workspace: Workspace,
    patch: Mapping[str, Any],
    expected_revision: int | None,
    actor: Mapping[str, Any],
) -> WorkspaceItem:
    with transaction.atomic():
        item = WorkspaceItem.objects.select_for_update().filter(pk=item_id, workspace=workspace).first()
        if item is None or item.deleted:
            raise WorkspaceError(f"no item {item_id} in this workspace")
        if expected_revision is not None and expected_revision != item.revision:
            raise RevisionConflict(item, expected_revision)
        new_path = patch.get("path")
        if new_path is not None and _path_taken(workspace, new_path, exclude_id=item.pk):
            raise _path_conflict(new_path)
        merged = {name: patch.get(name, getattr(item, name)) for name in PATCHABLE}
        _validate_payload(
            encoding=merged["encoding"],
            data=merged["data"],
            tags=merged["tags"],
            texts={name: merged[name] for name in ("label", "description", "mime_type")},
        )
        for name, value in patch.items():
            setattr(item, name, value)
        item.revision += 1
        item.updated = timezone.now()
        item.save(update_fields=[*patch, "revision", "updated"])
        _log(item, ItemAction.UPDATE, actor)
    return item


def remove_item(*, item_id: int, workspace: Workspace, hard: bool, actor: Mapping[str, Any]) -> None:
    with transaction.atomic():
        item = WorkspaceItem.objects.select_for_update().filter(pk=item_id, workspace=workspace).first()
        if item is None or (item.deleted and not hard):
            raise WorkspaceError(f"no item {item_id} in this workspace")
        if hard:
            _log(item, ItemAction.HARD_DELETE, actor)
            item.delete()
            return
        item.deleted = True
        item.revision += 1
        item.updated = timezone.now()
        item.save(update_fields=["deleted", "revision", "updated"])
        _log(item, ItemAction.REMOVE, actor)


def restore_item(*, item_id: int, workspace: Workspace, actor: Mapping[str, Any]) -> WorkspaceItem:
    """Undo a soft delete: the item is live again at its old path (a WorkspaceError when a live item took that
    path meanwhile). Logged as an update of the `deleted` flag, with `restored` in the actor."""
    path = ""
    try:
        with transaction.atomic():
            item = WorkspaceItem.objects.select_for_update().filter(pk=item_id, workspace=workspace).first()
            if item is None or not item.deleted:
                raise WorkspaceError(f"no deleted item {item_id} in this workspace")
            path = item.path or ""
            if item.path is not None and _path_taken(workspace, item.path, exclude_id=item.pk):
                raise _path_conflict(item.path)
            item.deleted = False
            item.revision += 1
            item.updated = timezone.now()
            item.save(update_fields=["deleted", "revision", "updated"])
            _log(item, ItemAction.UPDATE, {**actor, "restored": True})
    except IntegrityError:  # a concurrent add took the path between the check and the save
        raise _path_conflict(path) from None
    return item


# --- workspace tokens (MCP) -------------------------------------------------------------------------------

TOKEN_PREFIX = "mcpws_"  # noqa: S105 -- a label, not a secret


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def issue_token(*, workspace: Workspace, name: str = "") -> tuple[WorkspaceToken, str]:
    """A new bearer token for the workspace's MCP endpoint: the raw token is returned once, only its hash kept."""
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = WorkspaceToken.objects.create(
        workspace=workspace, name=name.strip()[:100], token_hash=hash_token(raw), prefix=raw[:12]
    )
    return token, raw


def revoke_token(*, token: WorkspaceToken) -> WorkspaceToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def touch_token(*, token_id: int) -> None:
    """Record use at most once a minute (an MCP client calls often)."""
    now = timezone.now()
    WorkspaceToken.objects.filter(pk=token_id).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - dt.timedelta(minutes=1))
    ).update(last_used_at=now)


# --- mailbox tokens (the mailbox MCP endpoint) -------------------------------------------------------------

MAILBOX_TOKEN_PREFIX = "mcpmb_"  # noqa: S105 -- a label, not a secret
MAX_TOKEN_NAME_CHARS = 100
MAX_TOKEN_DAYS = 3650
MAX_CALLS_PER_MINUTE = 6000


class TokenError(ValueError):
    pass


def clean_scopes(scopes: Any) -> list[str]:
    """Known scopes, deduplicated, in a fixed order; at least one."""
    if isinstance(scopes, str):
        scopes = [part.strip() for part in scopes.split(",") if part.strip()]
    if not isinstance(scopes, list | tuple) or not scopes:
        raise TokenError("choose at least one scope: " + ", ".join(McpScope.values))
    unknown = sorted({str(scope) for scope in scopes} - set(McpScope.values))
    if unknown:
        raise TokenError(f"unknown scope {', '.join(unknown)}: the scopes are " + ", ".join(McpScope.values))
    return [scope for scope in McpScope.values if scope in scopes]


def issue_mailbox_token(
    *,
    owner: Any,
    name: str,
    scopes: Any,
    expires_at: dt.datetime | None = None,
    calls_per_minute: int = 120,
    account: Any = None,
    folders: Sequence[str] = (),
) -> tuple[MailboxToken, str]:
    """A new bearer token for /mcp/mailbox/: the raw token is returned once, only its hash kept. Its own
    workspace heads the Inbox entries of the approvals it asks for ("<name> (mailbox MCP)")."""
    name = (name or "").strip()
    if not name:
        raise TokenError("give the token a name (what uses it, e.g. Claude Desktop)")
    if len(name) > MAX_TOKEN_NAME_CHARS:
        raise TokenError(f"the name is longer than {MAX_TOKEN_NAME_CHARS} characters")
    cleaned = clean_scopes(scopes)
    if account is not None and account.owner_id != owner.pk:
        raise TokenError("that account is not yours")
    chosen = list(dict.fromkeys(name.strip() for name in folders if name and name.strip()))
    if chosen:
        if account is None:
            raise TokenError("folders belong to one account: choose the account too")
        known = {entry.name for entry in account_selectors.folders_for_account(account=account)}
        unknown = [name for name in chosen if name not in known]
        if unknown:
            raise TokenError(
                f"{account.name} has no folder {', '.join(repr(n) for n in unknown)}; its folders: "
                + ", ".join(sorted(n for n in known if n))
            )
    if not 1 <= calls_per_minute <= MAX_CALLS_PER_MINUTE:
        raise TokenError(f"calls per minute must be between 1 and {MAX_CALLS_PER_MINUTE}")
    now = timezone.now()
    if expires_at is not None and (expires_at <= now or expires_at > now + dt.timedelta(days=MAX_TOKEN_DAYS)):
        raise TokenError(f"the expiry must be in the future and within {MAX_TOKEN_DAYS} days")
    raw = MAILBOX_TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        workspace = create_user_workspace(owner=owner, label=f"{name} (mailbox MCP)")
        token = MailboxToken.objects.create(
            owner=owner,
            workspace=workspace,
            name=name,
            token_hash=hash_token(raw),
            prefix=raw[:12],
            scopes=cleaned,
            expires_at=expires_at,
            calls_per_minute=calls_per_minute,
            account=account,
            folders=chosen,
        )
    return token, raw


def revoke_mailbox_token(*, token: MailboxToken) -> MailboxToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def touch_mailbox_token(*, token_id: int) -> None:
    """Record use at most once a minute (an MCP client calls often)."""
    now = timezone.now()
    MailboxToken.objects.filter(pk=token_id).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - dt.timedelta(minutes=1))
    ).update(last_used_at=now)


def take_call_slot(*, token_id: int, calls_per_minute: int, now: float | None = None) -> int:
    """Count a call against the token's budget for this minute: 0 when it may proceed, else the seconds until
    the next minute (the Retry-After). Counted in the cache: shared by every process with REDIS_URL, per
    process without."""
    moment = time.time() if now is None else now
    window = int(moment // 60)
    key = f"mcp-calls:{token_id}:{window}"
    cache.add(key, 0, timeout=120)
    try:
        used = cache.incr(key)
    except ValueError:  # evicted between add and incr
        cache.set(key, 1, timeout=120)
        used = 1
    if used <= calls_per_minute:
        return 0
    return max(1, int((window + 1) * 60 - moment + 0.999))


def record_mcp_call(
    *,
    token_id: int,
    owner_id: int,
    tool: str,
    argument_ids: dict[str, Any],
    ok: bool,
    error: str = "",
    result_bytes: int = 0,
    duration_ms: int = 0,
) -> McpCall:
    """One row of the mailbox MCP audit ledger (Settings → MCP tokens shows it to the owner)."""
    return McpCall.objects.create(
        token_id=token_id,
        owner_id=owner_id,
        tool=tool[:64],
        argument_ids=argument_ids,
        ok=ok,
        error=error[:300],
        result_bytes=max(0, int(result_bytes)),
        duration_ms=max(0, int(duration_ms)),
    )


# --- inbox --------------------------------------------------------------------------------------------------

MAX_COMMENT_BYTES = 64 * 1024
MAX_DOCS = 50
MAX_QUESTION_CHARS = 2000
MAX_OPTIONS = 10
MAX_OPTION_CHARS = 200
MAX_REPLY_CHARS = 20_000


class InboxError(ValueError):
    pass


def _now_ms() -> dt.datetime:
    """Now, truncated to milliseconds: the API's `ts` and the paging cursor are exact."""
    now = timezone.now()
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def _clean_docs(workspace: Workspace, docs: Any) -> list[dict[str, str]]:
    if docs is None:
        return []
    if not isinstance(docs, list):
        raise InboxError("docs must be a list of {path} objects")
    if len(docs) > MAX_DOCS:
        raise InboxError(f"docs has {len(docs)} pointers; at most {MAX_DOCS} are allowed")
    paths: list[str] = []
    for position, doc in enumerate(docs):
        if not isinstance(doc, Mapping) or set(doc) != {"path"}:
            raise InboxError(f"docs[{position}] must be an object with exactly one key, path")
        try:
            path = clean_path(doc["path"])
        except WorkspaceError as exc:
            raise InboxError(f"docs[{position}]: {exc}") from None
        if path is None:
            raise InboxError(f"docs[{position}].path is empty")
        if path not in paths:
            paths.append(path)
    live = set(
        WorkspaceItem.objects.filter(workspace=workspace, deleted=False, path__in=paths).values_list("path", flat=True)
    )
    missing = [path for path in paths if path not in live]
    if missing:
        listed = ", ".join(repr(path) for path in missing[:5])
        raise InboxError(
            f"no live item with path {listed} in this workspace; add it first with workspace_add_item(path=...) "
            "or check workspace_list_items"
        )
    return [{"path": path} for path in paths]


def _clean_ask(ask: Any) -> dict[str, Any] | None:
    if ask is None:
        return None
    if not isinstance(ask, Mapping):
        raise InboxError("ask must be an object {question, options}")
    question, options = ask.get("question"), ask.get("options", [])
    unknown = set(ask) - {"question", "options"}
    if unknown:
        raise InboxError(f"ask has unknown keys: {', '.join(sorted(unknown))}")
    if not isinstance(question, str) or not question.strip():
        raise InboxError("ask.question must be a non-empty string")
    if len(question) > MAX_QUESTION_CHARS:
        raise InboxError(f"ask.question is longer than {MAX_QUESTION_CHARS} characters")
    if not isinstance(options, list) or not all(isinstance(o, str) and o.strip() for o in options):
        raise InboxError("ask.options must be a list of non-empty strings")
    if len(options) > MAX_OPTIONS:
        raise InboxError(f"ask.options has {len(options)} options; at most {MAX_OPTIONS} are allowed")
    if any(len(o) > MAX_OPTION_CHARS for o in options):
        raise InboxError(f"every ask option must be at most {MAX_OPTION_CHARS} characters")
    return {"question": question.strip(), "options": [o.strip() for o in options]}


def push_inbox_entry(
    *,
    workspace: Workspace,
    docs: Any = None,
    comments: Any = None,
    ask: Any = None,
    source: str = EntrySource.MCP,
    run_id: int | None = None,
    created: dt.datetime | None = None,
) -> InboxEntry:
    """Append an entry to the workspace owner's Inbox. Everything is checked before anything is stored:
    at least one of docs/comments; every doc path names a live item of this workspace (pointers, resolved
    when read); comments markdown of at most 64 KB; an optional question with options."""
    if comments is None:
        comments = ""
    if not isinstance(comments, str):
        raise InboxError("comments must be a string (markdown)")
    size = len(comments.encode("utf-8"))
    if size > MAX_COMMENT_BYTES:
        raise InboxError(f"comments are {size} bytes; the limit is {MAX_COMMENT_BYTES} (64 KB)")
    cleaned_ask = _clean_ask(ask)
    cleaned_docs = _clean_docs(workspace, docs)
    if not cleaned_docs and not comments.strip() and cleaned_ask is None:
        raise InboxError("give at least one of docs (pointers to workspace items) or comments (markdown)")
    if source not in EntrySource.values:
        raise InboxError(f"unknown source {source!r}")
    with transaction.atomic():
        entry = InboxEntry.objects.create(
            owner_id=workspace.owner_id,
            workspace=workspace,
            workspace_label=workspace.display_label[:300],
            docs=cleaned_docs,
            comments=comments,
            ask=cleaned_ask,
            source=source,
            run_id=run_id if run_id is not None else workspace.run_id,
            created=created or _now_ms(),
        )
        owner_id, entry_id = workspace.owner_id, str(entry.pk)
        transaction.on_commit(lambda: events.push_inbox_event(owner_id, "inbox_entry", entry_id))
    return entry


def mark_entry_read(*, entry: InboxEntry) -> InboxEntry:
    if entry.read_at is None:
        entry.read_at = timezone.now()
        entry.save(update_fields=["read_at"])
        owner_id, entry_id = entry.owner_id, str(entry.pk)
        transaction.on_commit(lambda: events.push_inbox_event(owner_id, "inbox_read", entry_id))
    return entry


def delete_entry(*, entry: InboxEntry) -> None:
    owner_id, entry_id = entry.owner_id, str(entry.pk)
    entry.delete()
    transaction.on_commit(lambda: events.push_inbox_event(owner_id, "inbox_deleted", entry_id))


def reply_to_entry(*, entry: InboxEntry, text: str) -> InboxEntry:
    """The user's answer (an option or free text). For an entry from a run, the run continues with it (the
    orchestration subscriber enqueues that on commit); otherwise it lands in the workspace at
    inbox/replies/<entry id>.md, where the outside agent reads it with workspace_get_item."""
    if not isinstance(text, str) or not text.strip():
        raise InboxError("the reply is empty")
    if len(text) > MAX_REPLY_CHARS:
        raise InboxError(f"the reply is longer than {MAX_REPLY_CHARS} characters")
    text = text.strip()
    with transaction.atomic():
        locked = InboxEntry.objects.select_for_update().get(pk=entry.pk)
        if locked.replied_at is not None:
            raise InboxError("this entry was already answered")
        locked.reply, locked.replied_at = text, timezone.now()
        locked.read_at = locked.read_at or locked.replied_at
        locked.save(update_fields=["reply", "replied_at", "read_at"])
        if locked.run_id is None:
            workspace = locked.workspace
            add_item(
                workspace=workspace,
                data=f"Reply to your Inbox entry of {locked.created.isoformat()}:\n\n{text}\n",
                label="Reply from the user",
                mime_type="text/markdown",
                created_by=CreatedBy.USER,
                context={"inboxEntryId": str(locked.pk)},
                path=f"inbox/replies/{locked.pk}.md",
            )
        hooks.announce_reply(locked)
    return locked


def prune_mcp_calls(*, now: dt.datetime | None = None) -> int:
    """Delete audit rows older than MAILAGENT_MCP_AUDIT_DAYS (none when it is 0); returns how many."""
    days = int(settings.MAILAGENT_MCP_AUDIT_DAYS)
    if days <= 0:
        return 0
    cutoff = (now or timezone.now()) - dt.timedelta(days=days)
    deleted, _ = McpCall.objects.filter(at__lt=cutoff).delete()
    return deleted
