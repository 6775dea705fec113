"""The shared per-run Workspace: MIME-typed items that director, agents and tools add, update and remove.

The item shape follows the spec's WorkspaceItem (label, description, mimeType, encoding, data, tags,
created, updated, revision, deleted, context). The workspace refers to its run by id only
(orchestration imports workspaces, never the other way round).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class Workspace(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="workspaces")
    run_id = models.BigIntegerField(unique=True, null=True, blank=True)
    message = models.ForeignKey("mail.Message", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    director_id = models.BigIntegerField(null=True, blank=True)
    director_name = models.CharField(max_length=100, blank=True)
    title = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return self.title or f"workspace {self.pk}"


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
    description = models.TextField(blank=True)
    mime_type = models.CharField(max_length=255, default="text/plain")
    encoding = models.CharField(max_length=10, choices=Encoding.choices, default=Encoding.UTF8)
    data = models.TextField(blank=True)
    tags = models.JSONField(default=list, blank=True)
    created = models.DateTimeField(default=timezone.now)
    updated = models.DateTimeField(default=timezone.now)
    revision = models.PositiveIntegerField(default=1)
    deleted = models.BooleanField(default=False)
    # {email: {id, subject, from, date}, director: {id, name}, agent: {id, name}, createdBy, agentId, tool,
    #  conversationId}: who made the item, kept exactly as the spec's shared type.
    context = models.JSONField(default=dict, blank=True)
    created_by = models.CharField(max_length=10, choices=CreatedBy.choices, default=CreatedBy.DIRECTOR)

    class Meta:
        ordering = ["created", "pk"]
        indexes = [models.Index(fields=["workspace", "deleted", "created"], name="workspace_item_live")]

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
