from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from mailagent.crypto import EncryptedJSONField, EncryptedTextField


class Provider(models.TextChoices):
    GMAIL = "gmail", "Gmail"
    OUTLOOK = "outlook", "Outlook / Microsoft 365"
    IMAP = "imap", "IMAP"
    LOCAL = "local", "Local import (mbox / Maildir / .eml)"


class ImapSecurity(models.TextChoices):
    SSL = "ssl", "TLS (implicit, usually port 993)"
    STARTTLS = "starttls", "STARTTLS (usually port 143)"
    NONE = "none", "None (loopback/testing only)"


class SyncStatus(models.TextChoices):
    NEVER = "never", "Never synced"
    RUNNING = "running", "Syncing"
    OK = "ok", "OK"
    ERROR = "error", "Error"


class ErrorCategory(models.TextChoices):
    NONE = "", "—"
    MISSING_REFRESH_TOKEN = "missing_refresh_token", "Missing refresh token"
    INVALID_GRANT = "invalid_grant", "Authorization revoked or expired"
    NETWORK = "network", "Network"
    AUTH = "auth", "Login failed"
    OTHER = "other", "Other"


class SignatureMode(models.TextChoices):
    CUSTOM = "custom", "Custom text"
    PROVIDER = "provider", "Provider default"


class MailAccount(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mail_accounts")
    name = models.CharField(max_length=100, help_text="Short name used in the UI and `--account NAME`.")
    provider = models.CharField(max_length=16, choices=Provider.choices)
    address = models.CharField(max_length=320, blank=True)
    display_name = models.CharField(max_length=200, blank=True)
    # Passwords, OAuth token sets and MSAL caches: AES-256-GCM at rest.
    credentials = EncryptedJSONField(null=True, blank=True)
    imap_host = models.CharField(max_length=255, blank=True)
    imap_port = models.PositiveIntegerField(null=True, blank=True)
    imap_security = models.CharField(max_length=10, choices=ImapSecurity.choices, default=ImapSecurity.SSL)
    imap_username = models.CharField(max_length=320, blank=True)
    # Outgoing mail for IMAP accounts (replies are sent by SMTP; Gmail and Outlook send through their APIs).
    smtp_host = models.CharField(max_length=255, blank=True)
    smtp_port = models.PositiveIntegerField(null=True, blank=True)
    smtp_security = models.CharField(max_length=10, choices=ImapSecurity.choices, default=ImapSecurity.STARTTLS)
    smtp_username = models.CharField(max_length=320, blank=True)
    smtp_password = EncryptedTextField(
        blank=True, help_text="Stored encrypted (AES-256-GCM) when VX_MAILAGENT_KEY is set."
    )
    signature_mode = models.CharField(max_length=10, choices=SignatureMode.choices, default=SignatureMode.CUSTOM)
    signature_text = models.TextField(blank=True)
    provider_signature = models.TextField(blank=True, help_text="Fetched from the provider (Gmail sendAs).")
    enabled = models.BooleanField(default=True)
    # Provider-wide cursor (Gmail history id); per-folder cursors live on MailFolder.
    sync_cursor = models.CharField(max_length=255, blank=True)
    last_sync_at = models.DateTimeField(null=True, blank=True)
    last_sync_status = models.CharField(max_length=10, choices=SyncStatus.choices, default=SyncStatus.NEVER)
    last_error_category = models.CharField(max_length=32, choices=ErrorCategory.choices, blank=True, default="")
    last_error_message = models.TextField(blank=True)
    last_sync_summary = models.JSONField(default=dict, blank=True)
    # One sync per account across processes and machines: taken by a conditional UPDATE, renewed
    # between batches, and expiring on its own if the holder dies.
    sync_lock_token = models.CharField(max_length=64, blank=True)
    sync_lock_expires_at = models.DateTimeField(null=True, blank=True)
    # Who holds the lock ("host:pid:process start"): a holder on this host whose process is gone loses it at
    # once instead of at expiry (mailagent.liveness).
    sync_lock_holder = models.CharField(max_length=255, blank=True)
    # A sync asked for while another held the account (a write-back's follow-up during the routing's sync):
    # the holder queues one more pass when it is done, so the change is not left for the next cycle.
    sync_again_requested = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="mail_account_unique_name_per_owner")]
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_provider_display()})"

    @property
    def signature(self) -> str:
        if self.signature_mode == SignatureMode.PROVIDER and self.provider_signature:
            return self.provider_signature
        return self.signature_text


class MailFolder(models.Model):
    account = models.ForeignKey(MailAccount, on_delete=models.CASCADE, related_name="folders")
    name = models.CharField(max_length=512, help_text="Provider name or id (IMAP path, Gmail label id, Graph id).")
    display_name = models.CharField(max_length=512, blank=True)
    role = models.CharField(max_length=32, blank=True, help_text="inbox, sent, drafts, trash, spam, archive …")
    uidvalidity = models.BigIntegerField(null=True, blank=True)
    last_uid = models.BigIntegerField(default=0)
    sync_token = models.TextField(blank=True, help_text="Delta link or other incremental cursor.")
    last_synced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "name"], name="mail_folder_unique_name")]
        ordering = ["account", "name"]

    def __str__(self) -> str:
        return self.display_name or self.name


class Thread(models.Model):
    account = models.ForeignKey(MailAccount, on_delete=models.CASCADE, related_name="threads")
    provider_thread_id = models.CharField(max_length=255, blank=True)
    subject = models.CharField(max_length=998, blank=True)
    # Lowercased subject without Re:/Fwd:/AW: prefixes: replies without References join by it.
    subject_key = models.CharField(max_length=998, blank=True)
    first_message_at = models.DateTimeField(null=True, blank=True)
    last_message_at = models.DateTimeField(null=True, blank=True, db_index=True)
    message_count = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [
            models.Index(fields=["account", "-last_message_at"], name="mail_thread_recent"),
            models.Index(fields=["account", "provider_thread_id"], name="mail_thread_provider"),
            models.Index(fields=["account", "subject_key"], name="mail_thread_subject_key"),
        ]

    def __str__(self) -> str:
        return self.subject or "(no subject)"


class Message(models.Model):
    account = models.ForeignKey(MailAccount, on_delete=models.CASCADE, related_name="messages")
    thread = models.ForeignKey(Thread, on_delete=models.SET_NULL, null=True, blank=True, related_name="messages")
    provider_id = models.CharField(max_length=512)
    # Message-ID without angle brackets, or "sha256:<hex of the raw bytes>" when the header is missing,
    # so byte-identical copies without a Message-ID are still recognised as one message.
    dedupe_key = models.CharField(max_length=998)
    message_id = models.CharField(max_length=998, blank=True, db_index=True)
    in_reply_to = models.CharField(max_length=998, blank=True)
    references = models.TextField(blank=True)
    folder = models.CharField(max_length=512, blank=True)
    labels = models.JSONField(default=list, blank=True)
    from_name = models.CharField(max_length=512, blank=True)
    from_address = models.CharField(max_length=320, blank=True, db_index=True)
    to = models.JSONField(default=list, blank=True)
    cc = models.JSONField(default=list, blank=True)
    bcc = models.JSONField(default=list, blank=True)
    reply_to = models.JSONField(default=list, blank=True)
    subject = models.TextField(blank=True)
    date = models.DateTimeField(null=True, blank=True)
    body_text = models.TextField(blank=True)
    body_html = models.TextField(blank=True, help_text="Sanitized with nh3.")
    snippet = models.CharField(max_length=300, blank=True)
    size = models.PositiveIntegerField(default=0)
    seen = models.BooleanField(default=False)
    flagged = models.BooleanField(default=False)
    has_attachments = models.BooleanField(default=False)
    raw_headers = models.TextField(blank=True)
    parse_error = models.TextField(blank=True)
    stored_at = models.DateTimeField(default=timezone.now)
    # Set when the message's last location vanished on the server (expunged, folder deleted): it leaves the
    # mailbox, counts and search; runs and workspaces that used it keep it, shown as deleted on the server.
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # dedupe_key = Message-ID + a fingerprint of the content (apps/accounts/identity.py): two different
            # messages sharing a Message-ID are two rows, the same message in two folders is one row.
            models.UniqueConstraint(fields=["account", "dedupe_key"], name="mail_message_unique_dedupe_key"),
        ]
        indexes = [
            # provider_id / folder are the message's primary location (its first live one), kept for links
            # and attachment fetches; MessageLocation holds every place the message is in.
            models.Index(fields=["account", "provider_id"], name="mail_message_provider_id"),
            models.Index(fields=["account", "folder", "-date"], name="mail_message_folder_date"),
            models.Index(fields=["thread", "date"], name="mail_message_thread_date"),
            # Threading looks up replies stored before their parent once per stored batch.
            models.Index(fields=["account", "in_reply_to"], name="mail_message_in_reply_to"),
            # Search groups up to 300 hits by thread: reading (id, thread_id) from this narrow index never
            # walks a long body's overflow pages, which the table row (thread_id after the body) does.
            models.Index(fields=["id", "thread"], name="mail_message_id_thread"),
        ]
        ordering = ["-date", "-pk"]

    def __str__(self) -> str:
        return self.subject or "(no subject)"

    @property
    def sender(self) -> str:
        if self.from_name and self.from_address:
            return f"{self.from_name} <{self.from_address}>"
        return self.from_address or self.from_name

    def recipients(self, field: str) -> list[dict[str, Any]]:
        value = getattr(self, field)
        return value if isinstance(value, list) else []


class MessageLocation(models.Model):
    """One place a message is on the server: an IMAP (folder, UIDVALIDITY, UID), a Gmail label, a Graph
    folder; or the folder of a local import. Flags are per place, as IMAP keeps them."""

    account = models.ForeignKey(MailAccount, on_delete=models.CASCADE, related_name="locations")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="locations")
    folder = models.ForeignKey(MailFolder, on_delete=models.CASCADE, related_name="locations")
    provider_id = models.CharField(max_length=512)
    uid = models.BigIntegerField(null=True, blank=True)
    seen = models.BooleanField(default=False)
    flagged = models.BooleanField(default=False)
    # Stored before the server named it (a reply just sent, before the sync finds it in Sent): the first real
    # location of the message replaces it.
    provisional = models.BooleanField(default=False)
    # The label keywords the server last reported for this place (IMAP FLAGS that are not system flags or
    # protocol keywords, as spelled there; Gmail user labels and Outlook categories in the same keyword form):
    # a sync turns a change of them into tags added or taken off.
    keywords = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["folder", "provider_id"], name="mail_location_unique_provider_id"),
        ]
        indexes = [
            models.Index(fields=["account", "provider_id"], name="mail_location_provider_id"),
            models.Index(fields=["folder", "uid"], name="mail_location_folder_uid"),
        ]

    def __str__(self) -> str:
        return f"{self.provider_id} (message {self.message_id})"


class Attachment(models.Model):
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="attachments")
    filename = models.CharField(max_length=512, blank=True)
    mime_type = models.CharField(max_length=255, default="application/octet-stream")
    size = models.PositiveBigIntegerField(default=0)
    content_id = models.CharField(max_length=998, blank=True)
    is_inline = models.BooleanField(default=False)
    # The Content-Disposition type as sent ("attachment", "inline", "" without one); NULL for parts stored
    # before it was recorded. Search's has:attachment counts "attachment" parts, as notmuch does.
    disposition = models.CharField(max_length=32, null=True, blank=True)
    # The signature of a multipart/signed or a part of a multipart/encrypted (RFC 1847): protocol, not content.
    is_crypto_part = models.BooleanField(default=False)
    # IMAP body part number, Gmail attachmentId or Graph attachment id.
    provider_ref = models.CharField(max_length=2048, blank=True)
    # Relative to ATTACHMENT_CACHE_DIR once the bytes have been fetched.
    cache_path = models.CharField(max_length=512, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    extracted_text = models.TextField(null=True, blank=True)
    text_extracted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["message", "pk"]

    def __str__(self) -> str:
        return self.filename or f"attachment {self.pk}"


class MessageOutbox(models.Model):
    """The outbox of the messages-stored hooks for one message (apps/accounts/outbox.py): `indexed_at` and
    `routed_at` are set by the work itself, in the transaction that writes its result (index rows; runs);
    NULL = still to do, and the sweeper does it. A narrow row of its own, written with the message, so
    marking work done does not rewrite the wide message row (bodies, headers) twice more."""

    message = models.OneToOneField(Message, on_delete=models.CASCADE, related_name="outbox")
    stored_at = models.DateTimeField(default=timezone.now)
    indexed_at = models.DateTimeField(null=True, blank=True)
    routed_at = models.DateTimeField(null=True, blank=True)
    # An import the user asked to "route through my filters": routing ignores that the mail is older than
    # the filters (as a replay does). Stored with the message, so a retry or the sweeper routes it the same way.
    route_regardless_of_date = models.BooleanField(default=False)

    class Meta:
        indexes = [
            # The sweeper's scans: partial, so they hold only the (few) rows with work left.
            models.Index(fields=["stored_at"], condition=models.Q(indexed_at=None), name="mail_outbox_unindexed"),
            models.Index(fields=["stored_at"], condition=models.Q(routed_at=None), name="mail_outbox_unrouted"),
        ]

    def __str__(self) -> str:
        return f"outbox of message {self.message_id}"


class HookKind(models.TextChoices):
    INDEX = "index", "Search indexing"
    ROUTE = "route", "Routing"


class HookFailure(models.Model):
    """A messages-stored hook that failed for one message: the outbox sweeper retries it with backoff.

    Only failures get a row (the hot path writes none); the row goes when the work succeeds."""

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="hook_failures")
    kind = models.CharField(max_length=8, choices=HookKind.choices)
    attempts = models.PositiveIntegerField(default=1)
    next_attempt_at = models.DateTimeField()
    last_error = models.TextField(blank=True)
    first_failed_at = models.DateTimeField(default=timezone.now)
    last_failed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["message", "kind"], name="mail_hook_failure_unique")]
        indexes = [models.Index(fields=["kind", "next_attempt_at"], name="mail_hook_failure_due")]

    def __str__(self) -> str:
        return f"{self.kind} of message {self.message_id}: {self.attempts} attempts"


class MailActionKind(models.TextChoices):
    READ = "read", "Mark read"
    UNREAD = "unread", "Mark unread"
    FLAG = "flag", "Flag"
    UNFLAG = "unflag", "Remove flag"
    MOVE = "move", "Move"
    ARCHIVE = "archive", "Archive"
    TRASH = "trash", "Move to Trash"
    TAG = "tag", "Add tag"
    UNTAG = "untag", "Remove tag"


class MailActionStatus(models.TextChoices):
    PENDING = "pending", "Waiting to reach the server"
    DONE = "done", "Done on the server"
    FAILED = "failed", "Failed (will be retried)"
    GAVE_UP = "gave_up", "Failed (not retried)"


class MailAction(models.Model):
    """The write-back ledger: one decision made here (read, flag, archive, move, trash) on one message, on its
    way to the provider. Who asked, what, when and what the provider answered; failures are retried with
    backoff and shown, never dropped; an action that can be undone says how."""

    account = models.ForeignKey(MailAccount, on_delete=models.CASCADE, related_name="actions")
    message = models.ForeignKey(Message, on_delete=models.SET_NULL, null=True, blank=True, related_name="actions")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # user (a click here), rule (a rule the user enabled), approval (an agent's proposal the user approved).
    origin = models.CharField(max_length=16, default="user")
    kind = models.CharField(max_length=16, choices=MailActionKind.choices)
    target_folder = models.CharField(max_length=512, blank=True)  # MailFolder.name for move/archive/trash
    source_folders = models.JSONField(default=list, blank=True)  # where the message was: what undo moves back to
    tag = models.CharField(max_length=64, blank=True)  # the tag's name for tag/untag (an IMAP keyword, a Gmail label)
    status = models.CharField(max_length=16, choices=MailActionStatus.choices, default=MailActionStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    provider_response = models.TextField(blank=True)
    error = models.TextField(blank=True)
    undo_of = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="undone_by")
    created_at = models.DateTimeField(default=timezone.now)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="mail_action_due"),
            models.Index(fields=["account", "-created_at"], name="mail_action_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} message {self.message_id}: {self.status}"


class MailTag(models.Model):
    """A user's own tag (notmuch tags): exists while a message carries it. On IMAP accounts a tag is a keyword
    on the server, on Gmail a user label, on Outlook a category (apps/accounts/labels.py), both ways; on local
    imports it is kept here only.
    `key` is the NFC-casefolded name, so `tag:Über` finds a tag written "über" on SQLite too."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mail_tags")
    name = models.CharField(max_length=64)
    key = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "key"], name="mail_tag_unique_key")]
        ordering = ["key"]

    def __str__(self) -> str:
        return self.name


class MessageTag(models.Model):
    tag = models.ForeignKey(MailTag, on_delete=models.CASCADE, related_name="message_tags")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="message_tags")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tag", "message"], name="mail_message_tag_unique")]
        # tag:name looks up the messages of one tag (the unique index); the chips look up a message's tags.
        indexes = [models.Index(fields=["message", "tag"], name="mail_message_tag_by_message")]

    def __str__(self) -> str:
        return f"{self.tag_id} on {self.message_id}"
