"""Reply drafts: a reply the user writes (from a workspace item or an Ask draft) and sends only after pressing
Send and confirming. One model for both sources, so one Drafts page lists them all."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class DraftSource(models.TextChoices):
    WORKSPACE_ITEM = "workspace_item", "Workspace item"
    ASK_DRAFT = "ask_draft", "Ask draft"
    MCP = "mcp", "MCP client"


class BodyFormat(models.TextChoices):
    PLAIN = "plain", "Plain text"
    HTML = "html", "HTML"


class ReplyMode(models.TextChoices):
    REPLY = "reply", "Reply"
    REPLY_ALL = "reply_all", "Reply all"
    # The recipients came with the source (an Ask follow-up names who it waits for).
    AS_DRAFTED = "as_drafted", "As drafted"


class DraftStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    SENDING = "sending", "Sending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Send failed"


class ReplyDraft(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reply_drafts")
    account = models.ForeignKey("mail.MailAccount", on_delete=models.CASCADE, related_name="reply_drafts")
    # The message answered. Its headers are copied below, so the reply keeps its threading if it goes.
    original = models.ForeignKey("mail.Message", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    source = models.CharField(max_length=16, choices=DraftSource.choices)
    workspace_item = models.ForeignKey(
        "workspaces.WorkspaceItem", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    ask_draft = models.ForeignKey("ask.Draft", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    mode = models.CharField(max_length=12, choices=ReplyMode.choices, default=ReplyMode.REPLY)
    to = models.JSONField(default=list, blank=True)  # [{"name": str, "address": str}]
    cc = models.JSONField(default=list, blank=True)
    subject = models.CharField(max_length=998, blank=True)
    body = models.TextField(blank=True)
    body_format = models.CharField(max_length=8, choices=BodyFormat.choices, default=BodyFormat.PLAIN)
    include_signature = models.BooleanField(default=True)
    in_reply_to_header = models.CharField(max_length=998, blank=True)  # without angle brackets
    references_header = models.TextField(blank=True)  # space separated, without angle brackets
    provider_thread_id = models.CharField(max_length=255, blank=True)  # Gmail threadId
    status = models.CharField(max_length=8, choices=DraftStatus.choices, default=DraftStatus.DRAFT)
    last_error = models.TextField(blank=True)
    # Bumped on every edit: a confirmation is for one revision, so what is confirmed is what is sent.
    revision = models.PositiveIntegerField(default=1)
    # Fixed at the first send attempt and reused by retries, so a retry never makes a second distinct message.
    message_id = models.CharField(max_length=998, blank=True)
    sent_message = models.ForeignKey("mail.Message", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    send_started_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-updated_at", "-pk"]
        indexes = [models.Index(fields=["owner", "status", "-updated_at"], name="reply_draft_owner_status")]

    def __str__(self) -> str:
        return self.subject or f"reply draft {self.pk}"

    @property
    def is_editable(self) -> bool:
        return self.status in (DraftStatus.DRAFT, DraftStatus.FAILED)


class ReplyAttachment(models.Model):
    """A file that goes with a reply: uploaded in the editor, or a copy of a workspace item of the run the reply
    came from (the bytes are copied, so the reply sends what the user attached even if the item changes)."""

    draft = models.ForeignKey(ReplyDraft, on_delete=models.CASCADE, related_name="attachments")
    filename = models.CharField(max_length=255)
    content_type = models.CharField(max_length=255, default="application/octet-stream")
    size = models.PositiveBigIntegerField(default=0)
    data = models.BinaryField()
    workspace_item = models.ForeignKey(
        "workspaces.WorkspaceItem", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return self.filename
