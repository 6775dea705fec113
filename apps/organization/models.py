"""The library (a root folder per owner with inbox/ inside), its files with their digest and provenance,
folder suggestions, the move journal (undo) and the owner's organization settings."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from django.conf import settings
from django.db import models
from django.utils import timezone

INBOX_DIR = "inbox"
GUIDELINE_NAME = "guideline.md"


class Library(models.Model):
    owner = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="library")
    root = models.CharField(max_length=1024, help_text="Absolute path of the library folder.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "libraries"

    def __str__(self) -> str:
        return self.root

    @property
    def root_path(self) -> Path:
        return Path(self.root)

    @property
    def inbox_path(self) -> Path:
        return Path(self.root) / INBOX_DIR


class OrganizationSettings(models.Model):
    """The seed's settings (autoSuggest, suggestThreshold, autoMove, autoMoveThreshold, targetFolders,
    excludeFolders) plus the organization ApiConfig (optional: without it the classifier alone decides)."""

    owner = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="organization_settings"
    )
    auto_suggest = models.BooleanField(default=True)
    suggest_threshold = models.FloatField(default=0.8)
    auto_move = models.BooleanField(default=False)
    auto_move_threshold = models.FloatField(default=0.95)
    target_folders = models.JSONField(default=list, blank=True, help_text="Only these folders (empty: all).")
    exclude_folders = models.JSONField(default=list, blank=True, help_text="Never suggest these folders.")
    api_config = models.ForeignKey("llm.ApiConfig", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"organization settings of {self.owner_id}"


class AttachmentIntake(models.Model):
    """Per mail account: save attachments of newly stored mail into the library inbox."""

    account = models.OneToOneField("mail.MailAccount", on_delete=models.CASCADE, related_name="attachment_intake")
    enabled = models.BooleanField(default=False)
    max_bytes = models.PositiveBigIntegerField(default=25 * 1024 * 1024)
    # Lowercase file suffixes (".pdf"); empty = every type.
    allowed_suffixes = models.JSONField(default=list, blank=True)
    include_inline = models.BooleanField(default=False)
    # Mail stored before the switch was turned on is not swept in afterwards.
    enabled_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"attachment intake for account {self.account_id}"


class FileStatus(models.TextChoices):
    INBOX = "inbox", "In the inbox"
    FILED = "filed", "In a library folder"
    MISSING = "missing", "Gone from disk"


class FileSource(models.TextChoices):
    SCAN = "scan", "Scan"
    WATCH = "watch", "Watch"
    UPLOAD = "upload", "Upload"
    ATTACHMENT = "attachment", "Mail attachment"


class LibraryFile(models.Model):
    library = models.ForeignKey(Library, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=1024, help_text="Relative to the library root, '/'-separated.")
    status = models.CharField(max_length=8, choices=FileStatus.choices, default=FileStatus.INBOX)
    size = models.PositiveBigIntegerField(default=0)
    mtime = models.FloatField(default=0)
    sha256 = models.CharField(max_length=64)
    mime_type = models.CharField(max_length=255, blank=True)
    digest_kind = models.CharField(max_length=16, blank=True)  # pdf | docx | html | text | email | image | binary
    digest_text = models.TextField(blank=True)
    digest_error = models.CharField(max_length=500, blank=True)
    metadata = models.JSONField(default=dict, blank=True)  # title, sender, date, image size, EXIF …
    source = models.CharField(max_length=12, choices=FileSource.choices, default=FileSource.SCAN)
    # Where it came from: {"message_id", "account_id", "sender", "subject", "date"} for attachments.
    provenance = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    digested_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["library", "path"],
                condition=~models.Q(status="missing"),
                name="library_file_unique_present_path",
            )
        ]
        indexes = [models.Index(fields=["library", "status"], name="library_file_status")]

    def __str__(self) -> str:
        return self.path

    @property
    def name(self) -> str:
        return PurePosixPath(self.path).name

    @property
    def folder(self) -> str:
        """The library folder the file is in ('' for a file at the root)."""
        parent = str(PurePosixPath(self.path).parent)
        return "" if parent == "." else parent

    @property
    def absolute_path(self) -> Path:
        return self.library.root_path / self.path


class SuggestionStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    ACCEPTED = "accepted", "Accepted"
    REJECTED = "rejected", "Rejected"
    EXPIRED = "expired", "Expired"


class SuggestionSource(models.TextChoices):
    CLASSIFIER = "classifier", "Learned classifier"
    LLM = "llm", "Organize agent"
    RULE = "rule", "Rule"


class Suggestion(models.Model):
    file = models.ForeignKey(LibraryFile, on_delete=models.CASCADE, related_name="suggestions")
    status = models.CharField(max_length=8, choices=SuggestionStatus.choices, default=SuggestionStatus.PENDING)
    # Blank when the system abstains ("no confident folder"); the alternatives still say what it thought.
    target_folder = models.CharField(max_length=1024, blank=True)
    confidence = models.FloatField(default=0)
    reasoning = models.TextField(blank=True)
    alternatives = models.JSONField(default=list, blank=True)  # [{"folder", "confidence"}] top 3
    source = models.CharField(max_length=10, choices=SuggestionSource.choices, default=SuggestionSource.CLASSIFIER)
    file_sha256 = models.CharField(max_length=64, help_text="The file's content when suggested.")
    # What the owner did: accept (target), choose (another folder), reject; and the folder it went to.
    action = models.CharField(max_length=8, blank=True)
    final_folder = models.CharField(max_length=1024, blank=True)
    expired_reason = models.CharField(max_length=200, blank=True)
    # The organize agent's messages and provider events, when the LLM made (or tried) the suggestion.
    transcript = models.JSONField(default=list, blank=True)
    provider_events = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["file"], condition=models.Q(status="pending"), name="suggestion_one_pending_per_file"
            )
        ]

    def __str__(self) -> str:
        return f"{self.file_id} → {self.target_folder or '(no confident folder)'}"

    @property
    def abstained(self) -> bool:
        return not self.target_folder


class Move(models.Model):
    """The journal: every move inside a library, with what is needed to undo it."""

    library = models.ForeignKey(Library, on_delete=models.CASCADE, related_name="moves")
    file = models.ForeignKey(LibraryFile, on_delete=models.SET_NULL, null=True, blank=True, related_name="moves")
    suggestion = models.ForeignKey(Suggestion, on_delete=models.SET_NULL, null=True, blank=True, related_name="moves")
    from_path = models.CharField(max_length=1024)
    to_path = models.CharField(max_length=1024)
    sha256 = models.CharField(max_length=64)
    reason = models.CharField(max_length=200)  # accept | choose | auto-move (confidence 0.97) | …
    # The shallowest folder this move created ("" when the target existed): undo removes it again when empty.
    created_folder = models.CharField(max_length=1024, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    undone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.from_path} → {self.to_path}"


class GuidelineProposal(models.Model):
    """A proposed addition to guideline.md learned from decisions; the owner accepts or discards it."""

    library = models.ForeignKey(Library, on_delete=models.CASCADE, related_name="guideline_proposals")
    text = models.TextField()
    evidence = models.JSONField(default=list, blank=True)  # [{"pattern", "folder", "decisions", "agreeing"}]
    source = models.CharField(max_length=10, choices=SuggestionSource.choices, default=SuggestionSource.RULE)
    status = models.CharField(max_length=9, default="pending")  # pending | accepted | discarded
    # When the organization ApiConfig wrote (or failed to write) the line: its provider events, and why the
    # learned pattern's own text is shown instead when it failed.
    provider_events = models.JSONField(default=list, blank=True)
    fallback_reason = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.text[:60]


class ClassifierState(models.Model):
    """When the owner's classifier was last trained and on what (the model itself is a file in DATA_DIR)."""

    library = models.OneToOneField(Library, on_delete=models.CASCADE, related_name="classifier_state")
    trained_at = models.DateTimeField(null=True, blank=True)
    samples = models.PositiveIntegerField(default=0)
    folders = models.JSONField(default=list, blank=True)
    temperature = models.FloatField(default=1.0)
    train_seconds = models.FloatField(default=0)
    # Decisions since the last training; a retrain is queued when this is non-zero.
    stale = models.BooleanField(default=True)

    def __str__(self) -> str:
        return f"classifier of library {self.library_id}"


class FileEmbedding(models.Model):
    """A library file's text through the local embedder (apps.search.embedders), kept so that suggesting and
    retraining never re-embed the library: recomputed only when the embedder or the embedded text changes."""

    file = models.OneToOneField(LibraryFile, on_delete=models.CASCADE, related_name="embedding")
    embedder = models.CharField(max_length=200)  # the embedder's key (model and dimension)
    text_sha256 = models.CharField(max_length=64)  # of the text that was embedded
    vector = models.BinaryField()  # float32, L2-normalised
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"embedding of file {self.file_id} ({self.embedder})"


class SavedAttachment(models.Model):
    """One row per attachment the intake handled (saved or skipped, and why): the sweep skips these."""

    attachment = models.OneToOneField("mail.Attachment", on_delete=models.CASCADE, related_name="+")
    file = models.ForeignKey(LibraryFile, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    outcome = models.CharField(max_length=300)  # "saved" or the reason it was skipped
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"attachment {self.attachment_id}: {self.outcome}"
