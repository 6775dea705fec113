"""Filters route new mail to directors; fetch cycles group what one fetch synced and routed."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

FILTER_HELP = (
    "A regular expression searched anywhere in the field (use ^ and $ to anchor). "
    "From/To/CC/BCC are matched against “Name <address>” of each person, e.g. "
    r"<code>client.*@domain\.com</code>; Subject and Body against their text, e.g. <code>urgent</code>; "
    "Date against the ISO 8601 timestamp, e.g. <code>^2026-11-</code> or <code>T0[0-6]:</code> for night mail."
)


class FilterField(models.TextChoices):
    FROM = "from", "From"
    TO = "to", "To"
    CC = "cc", "CC"
    BCC = "bcc", "BCC"
    SUBJECT = "subject", "Subject"
    BODY = "body", "Body"
    DATE = "date", "Date"


class RuleAction(models.TextChoices):
    """What a filter also does to the mail it matches, on the mail server too (the write-back ledger).
    Nothing that loses mail: no Trash, no delete."""

    NONE = "", "Nothing else"
    READ = "read", "Mark as read"
    FLAG = "flag", "Flag"
    ARCHIVE = "archive", "Archive"
    MOVE = "move", "Move to a folder"
    TAG = "tag", "Add a tag"


class Filter(models.Model):
    director = models.ForeignKey("orchestration.Director", on_delete=models.CASCADE, related_name="filters")
    field = models.CharField(max_length=10, choices=FilterField.choices, default=FilterField.FROM)
    regex = models.CharField(max_length=1000, help_text=FILTER_HELP)
    case_insensitive = models.BooleanField(default=True)
    description = models.CharField(max_length=300, blank=True)
    order = models.PositiveIntegerField(default=0, db_index=True)
    enabled = models.BooleanField(default=True)
    # Save the attachments of the mail this filter matches into the owner's library inbox (apps.organization's
    # intake, within the account's size/type limits), even when the account's own switch is off.
    save_attachments = models.BooleanField(default=False)
    # A rule the user enabled: applied to each new mail the filter matches, here and on the server.
    mail_action = models.CharField(max_length=16, choices=RuleAction.choices, blank=True, default="")
    mail_action_folder = models.CharField(max_length=512, blank=True, help_text="The folder for “Move to a folder”.")
    # IMAP keyword / Gmail label / Outlook category on the server (apps/accounts/labels.py).
    mail_action_tag = models.CharField(max_length=64, blank=True, help_text="The tag for “Add a tag”.")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    # The last evaluation problem (a pattern that ran out of time on some message), shown in the UI.
    error_count = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["order", "pk"]

    def __str__(self) -> str:
        return f"{self.get_field_display()} ~ /{self.regex}/ → {self.director_id}"

    def clean(self) -> None:
        # The admin, the API and the UI all save through ModelForm/full_clean or actions that call this.
        from django.core.exceptions import ValidationError

        from apps.routing.matching import InvalidPattern, compile_pattern

        try:
            compile_pattern(self.regex, case_insensitive=self.case_insensitive)
        except InvalidPattern as exc:
            raise ValidationError({"regex": str(exc)}) from exc


class CycleTrigger(models.TextChoices):
    SCHEDULE = "schedule", "Schedule"
    FETCH = "fetch", "Fetch now"
    RUN = "run", "Fetch and process now"


class CycleStatus(models.TextChoices):
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"


class FetchCycle(models.Model):
    """One fetch of one owner's accounts. Each owner has their own fetcher schedule and sees only their
    own cycles (staff see every owner's); cycles from before owners existed keep a null owner."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="fetch_cycles"
    )
    trigger = models.CharField(max_length=10, choices=CycleTrigger.choices)
    status = models.CharField(max_length=10, choices=CycleStatus.choices, default=CycleStatus.RUNNING)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    started_at = models.DateTimeField(default=timezone.now, db_index=True)
    synced_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    accounts_synced = models.PositiveIntegerField(default=0)
    accounts_failed = models.PositiveIntegerField(default=0)
    messages_stored = models.PositiveIntegerField(default=0)
    runs_created = models.PositiveIntegerField(default=0)
    runs_processed = models.PositiveIntegerField(default=0)
    # Per account: {"<id>": {"name", "status", "created", "duplicates", "error"}}.
    accounts = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at", "-pk"]

    def __str__(self) -> str:
        return f"fetch cycle {self.pk} ({self.trigger}, {self.status})"

    @property
    def duration_seconds(self) -> float | None:
        end = self.finished_at
        return (end - self.started_at).total_seconds() if end else None

    @property
    def sync_seconds(self) -> float | None:
        return (self.synced_at - self.started_at).total_seconds() if self.synced_at else None


class FetchCycleMessage(models.Model):
    """Which stored messages a cycle brought in (routing's own bookkeeping, written by the hook)."""

    cycle = models.ForeignKey(FetchCycle, on_delete=models.CASCADE, related_name="cycle_messages")
    message = models.ForeignKey("mail.Message", on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cycle", "message"], name="fetch_cycle_message_unique")]

    def __str__(self) -> str:
        return f"cycle {self.cycle_id}: message {self.message_id}"
