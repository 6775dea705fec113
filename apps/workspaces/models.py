"""Workspaces: MIME-typed items that directors, agents, tools and outside (MCP) agents add, update and
remove; the Inbox entries they push to the user; and the bearer tokens outside agents use.

The item shape follows the spec's WorkspaceItem (label, description, mimeType, encoding, data, tags,
created, updated, revision, deleted, context) plus an optional `path` that Inbox entries point at. A
workspace belongs to one run (refered to by id only: orchestration imports workspaces, never the other
way round) or, with no run, was created by its owner for an outside agent.
"""

from __future__ import annotations

import datetime as dt
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from mailagent.crypto import EncryptedJSONField, EncryptedTextField


class Workspace(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="workspaces")
    run_id = models.BigIntegerField(unique=True, null=True, blank=True)
    message = models.ForeignKey("mail.Message", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    director_id = models.BigIntegerField(null=True, blank=True)
    director_name = models.CharField(max_length=100, blank=True)
    title = models.CharField(max_length=300, blank=True)
    # The stable, human name shown as the header of every Inbox entry from this workspace.
    label = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return self.display_label

    @property
    def display_label(self) -> str:
        if self.label:
            return self.label
        if self.title and self.director_name:
            return f"{self.title} — {self.director_name}"
        return self.title or f"Workspace {self.pk}"

    @property
    def is_run_workspace(self) -> bool:
        return self.run_id is not None


class Encoding(models.TextChoices):
    UTF8 = "utf8", "UTF-8 text"
    BASE64 = "base64", "Base64"


class CreatedBy(models.TextChoices):
    DIRECTOR = "director", "Director"
    AGENT = "agent", "Agent"
    TOOL = "tool", "Tool"
    USER = "user", "User"


class WorkspaceItem(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="items")
    label = models.CharField(max_length=300, blank=True)
    # The content is encrypted at rest; label, path, type and tags stay plaintext: they are what the
    # Results page searches and the workspace tools filter on in SQL.
    description = EncryptedTextField(blank=True)
    mime_type = models.CharField(max_length=255, default="text/plain")
    encoding = models.CharField(max_length=10, choices=Encoding.choices, default=Encoding.UTF8)
    data = EncryptedTextField(blank=True)
    tags = models.JSONField(default=list, blank=True)
    created = models.DateTimeField(default=timezone.now)
    updated = models.DateTimeField(default=timezone.now)
    revision = models.PositiveIntegerField(default=1)
    deleted = models.BooleanField(default=False)
    # {email: {id, subject, from, date}, director: {id, name}, agent: {id, name}, createdBy, agentId, tool,
    #  conversationId}: who made the item, kept exactly as the spec's shared type.
    context = models.JSONField(default=dict, blank=True)
    created_by = models.CharField(max_length=10, choices=CreatedBy.choices, default=CreatedBy.DIRECTOR)
    # Where Inbox doc pointers find the item ("reports/summary.md"); unique among the live items.
    path = models.CharField(max_length=500, null=True, blank=True)

    class Meta:
        ordering = ["created", "pk"]
        indexes = [models.Index(fields=["workspace", "deleted", "created"], name="workspace_item_live")]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "path"],
                condition=Q(deleted=False, path__isnull=False),
                name="workspace_item_live_path_unique",
            )
        ]

    def __str__(self) -> str:
        return self.label or f"{self.mime_type} item {self.pk}"


class ItemAction(models.TextChoices):
    ADD = "add", "Added"
    UPDATE = "update", "Updated"
    REMOVE = "remove", "Soft-deleted"
    HARD_DELETE = "hard_delete", "Deleted"


class WorkspaceItemLog(models.Model):
    """Every add/update/remove, with who did it; survives hard deletes (item_id is a plain id)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="item_log")
    item_id = models.BigIntegerField()
    action = models.CharField(max_length=12, choices=ItemAction.choices)
    revision = models.PositiveIntegerField(default=0)
    actor = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["at", "pk"]

    def __str__(self) -> str:
        return f"{self.action} item {self.item_id} r{self.revision}"


class WorkspaceToken(models.Model):
    """A bearer token for the workspace's MCP endpoint. Only its SHA-256 is stored; the token is shown once."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="tokens")
    name = models.CharField(max_length=100, blank=True)
    token_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=16, help_text="The token's first characters, to tell tokens apart.")
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({'revoked' if self.revoked_at else 'active'})"


class McpScope(models.TextChoices):
    READ = "read", "read: search and read mail and files, ask questions"
    DRAFT = "draft", "draft: write drafts (never sent by themselves)"
    ACT = "act", "act: ask to send drafts or change mail (each waits for your approval)"


class MailboxToken(models.Model):
    """A bearer token for the owner's mailbox MCP endpoint (/mcp/mailbox/), with scopes. Only its SHA-256 is
    stored; the token is shown once. `workspace` is where its approval requests reach the owner's Inbox."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mailbox_tokens")
    workspace = models.ForeignKey(Workspace, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    # Only this account's mail (None: all the owner's accounts). Deleting the account deletes the token, so a
    # restricted token never widens to every account.
    account = models.ForeignKey("mail.MailAccount", on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    # Only mail in these folders of `account` and their subfolders (names as the account lists them); empty:
    # the whole account. A folder renamed or deleted on the server widens nothing: its old name matches nothing.
    folders = models.JSONField(default=list, blank=True)
    name = models.CharField(max_length=100)
    token_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=16, help_text="The token's first characters, to tell tokens apart.")
    scopes = models.JSONField(default=list)  # McpScope values
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    calls_per_minute = models.PositiveIntegerField(default=120, help_text="More calls in a minute are refused.")
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["owner", "-created_at"], name="mailbox_token_owner")]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def is_active(self, now: dt.datetime | None = None) -> bool:
        moment = now or timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > moment)


class McpCall(models.Model):
    """The audit ledger of the mailbox MCP endpoint: one row per tool call, with the ids it named (never the
    query or body text), how much it returned, and whether it succeeded."""

    token = models.ForeignKey(MailboxToken, on_delete=models.CASCADE, related_name="calls")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    tool = models.CharField(max_length=64)
    argument_ids = models.JSONField(default=dict, blank=True)  # {"thread_id": 12, "message_ids": [3, 4]}
    ok = models.BooleanField(default=True)
    error = models.CharField(max_length=300, blank=True)
    result_bytes = models.PositiveIntegerField(default=0)
    duration_ms = models.PositiveIntegerField(default=0)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-at", "-pk"]
        indexes = [models.Index(fields=["owner", "-at"], name="mcp_call_owner_recent")]

    def __str__(self) -> str:
        return f"{self.tool} by token {self.token_id} at {self.at:%Y-%m-%d %H:%M:%S}"


class EntrySource(models.TextChoices):
    MCP = "mcp", "MCP client"
    DIRECTOR = "director", "Director"
    AGENT = "agent", "Agent"
    SEED = "seed", "Development seed"


class InboxEntry(models.Model):
    """What an agent pushed to its user: live pointers to workspace docs, markdown comments and, from our
    own directors and agents, an optional question whose answer goes back into the run."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="inbox_entries")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="inbox_entries")
    workspace_label = models.CharField(max_length=300)
    docs = models.JSONField(default=list, blank=True)  # [{"path": "..."}], resolved at read time
    # What was said (comments, the question, the reply) is encrypted at rest.
    comments = EncryptedTextField(blank=True)
    ask = EncryptedJSONField(null=True, blank=True)  # {"question": str, "options": [str, ...]}
    source = models.CharField(max_length=10, choices=EntrySource.choices, default=EntrySource.MCP)
    run_id = models.BigIntegerField(null=True, blank=True)
    created = models.DateTimeField(default=timezone.now)  # millisecond precision (the API's ts)
    read_at = models.DateTimeField(null=True, blank=True)
    reply = EncryptedTextField(blank=True)
    replied_at = models.DateTimeField(null=True, blank=True)
    # Set when the run took the reply into its transcript (an outbox flag: a reply not yet taken is resent).
    reply_delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [
            models.Index(fields=["owner", "-created", "-id"], name="inbox_owner_newest"),
            models.Index(fields=["owner", "workspace", "-created", "-id"], name="inbox_owner_workspace_newest"),
            models.Index(fields=["owner"], condition=Q(read_at__isnull=True), name="inbox_owner_unread"),
        ]
        verbose_name_plural = "inbox entries"

    def __str__(self) -> str:
        return f"{self.workspace_label}: {self.comments[:60]}"
