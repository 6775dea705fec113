"""The index: one row per searchable document (message, attachment text, later library files), its
embedding chunks, and a one-row state that tells in-process vector caches what changed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper

if TYPE_CHECKING:
    import numpy as np  # loaded where it is used: numpy (~14 MB) stays out of processes that never search


class DocumentKind(models.TextChoices):
    MESSAGE = "message", "Message"
    ATTACHMENT = "attachment", "Attachment text"
    FILE = "file", "Library file"


class EmbeddingField(models.Field):
    """float32 vectors: a BLOB on SQLite (scanned with numpy), pgvector's `vector` on PostgreSQL.

    The column has no fixed dimension so a new embedder does not need an ALTER TABLE; the HNSW index is
    built on `embedding::vector(<dim>)` for the embedder in use (see backends/postgres.py).
    """

    description = "Embedding vector"

    def db_type(self, connection: BaseDatabaseWrapper) -> str:
        return "vector" if connection.vendor == "postgresql" else "blob"

    def get_db_prep_value(self, value: Any, connection: BaseDatabaseWrapper, prepared: bool = False) -> Any:
        if value is None:
            return None
        return encode_vector(value, vendor=connection.vendor)

    def from_db_value(self, value: Any, expression: Any, connection: BaseDatabaseWrapper) -> np.ndarray | None:
        return decode_vector(value)

    def to_python(self, value: Any) -> np.ndarray | None:
        return decode_vector(value)


def encode_vector(value: Any, *, vendor: str) -> str | bytes:
    import numpy as np

    array = np.asarray(value, dtype="<f4").ravel()
    if vendor == "postgresql":
        return "[" + ",".join(f"{x:.7g}" for x in array.tolist()) + "]"
    return array.tobytes()


def decode_vector(value: Any) -> np.ndarray | None:
    import numpy as np

    if value is None or isinstance(value, np.ndarray):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(value), dtype="<f4")
    if isinstance(value, str):
        return np.array([float(x) for x in value.strip("[]").split(",") if x], dtype=np.float32)
    return np.asarray(value, dtype=np.float32)


class SearchDocument(models.Model):
    kind = models.CharField(max_length=16, choices=DocumentKind.choices)
    object_id = models.BigIntegerField(help_text="Primary key of the indexed row in its own table.")
    # Messages and attachment texts belong to a message: deleting it removes them from both indexes.
    message = models.ForeignKey(
        "mail.Message", on_delete=models.CASCADE, null=True, blank=True, related_name="search_documents"
    )
    account = models.ForeignKey(
        "mail.MailAccount", on_delete=models.CASCADE, null=True, blank=True, related_name="search_documents"
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    # Original text (snippets, embedding chunks); the full-text index holds the folded form.
    title = models.TextField(blank=True)
    people = models.TextField(blank=True, help_text="Sender and recipient names and addresses.")
    body = models.TextField(blank=True)
    # Denormalised filter columns so a filtered search needs no join to the source tables.
    folder = models.CharField(max_length=512, blank=True)
    date = models.DateTimeField(null=True, blank=True)
    from_address = models.CharField(max_length=320, blank=True)
    recipients = models.TextField(blank=True, help_text="Lowercased recipient addresses, space separated.")
    has_attachments = models.BooleanField(default=False)
    content_hash = models.CharField(max_length=40)
    # Key of the embedder whose chunks are stored for this document; "" = waiting for the backfill.
    embedded_with = models.CharField(max_length=200, blank=True, default="")
    indexed_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "search_document"
        constraints = [models.UniqueConstraint(fields=["kind", "object_id"], name="search_document_unique_object")]
        indexes = [
            models.Index(fields=["date"], name="search_document_date"),
            models.Index(fields=["account", "kind"], name="search_document_account_kind"),
            models.Index(fields=["embedded_with", "id"], name="search_document_embedded"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.object_id}"


class SearchHeaders(models.Model):
    """The fields the operators from: to: cc: bcc: subject: match, as folded words (apps/search/headers.py), one
    row per document. A table of its own rather than columns of search_document: SQLite stores columns added
    later behind the (often long) body, and a scan of every sender and recipient (a query of operators alone)
    read 113 ms there against 45 ms in a narrow table (44,700 Enron mails, 13 MB of recipients)."""

    document = models.OneToOneField(SearchDocument, on_delete=models.CASCADE, primary_key=True, related_name="headers")
    sender = models.TextField(blank=True)
    to = models.TextField(blank=True)
    cc = models.TextField(blank=True)
    bcc = models.TextField(blank=True)
    subject = models.TextField(blank=True)

    class Meta:
        db_table = "search_headers"

    def __str__(self) -> str:
        return f"headers of {self.document_id}"


class SearchChunk(models.Model):
    """A slice of a document's text with its embedding; only written together with its vector."""

    document = models.ForeignKey(SearchDocument, on_delete=models.CASCADE, related_name="chunks")
    chunk_no = models.PositiveIntegerField()
    text = models.TextField()
    embedding = EmbeddingField()

    class Meta:
        db_table = "search_chunk"
        constraints = [models.UniqueConstraint(fields=["document", "chunk_no"], name="search_chunk_unique_position")]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.chunk_no}"


class SearchIndexState(models.Model):
    """One row (id=1). `generation` changes whenever chunks are deleted (a trigger on SQLite does it, so
    cascades count too); in-process vector matrices compare it to know when rows have gone."""

    generation = models.CharField(max_length=32, default="0")
    embedder = models.CharField(max_length=200, blank=True, help_text="Key of the embedder the vectors are from.")
    dimension = models.PositiveIntegerField(default=0)
    # One embedding backfill at a time across processes; expires on its own if the worker dies, and is taken
    # over at once when its holder (mailagent.liveness.process_identity) is certainly dead.
    backfill_lock_until = models.DateTimeField(null=True, blank=True)
    backfill_holder = models.CharField(max_length=200, blank=True)
    # Changes whenever gists are stored: in-process gist matrices (apps/search/gist.py) add the new rows.
    gist_generation = models.CharField(max_length=32, default="0")

    class Meta:
        db_table = "search_index_state"

    def __str__(self) -> str:
        return f"search index state ({self.embedder or 'no embedder'})"


class SearchGist(models.Model):
    """A second, small vector per message document: the gist model's embedding of its subject and the opening
    of its own text (apps/search/gist.py), plus that of the text's continuation. Ask and the search page
    compare the question with them to rerank the mails they found; the database never searches over them, so
    they are plain float32 bytes on every database. Stale when the document's content hash or the gist model
    changes."""

    document = models.OneToOneField(SearchDocument, on_delete=models.CASCADE, primary_key=True, related_name="gist")
    embedder = models.CharField(max_length=200)
    content_hash = models.CharField(max_length=40)
    vector = models.BinaryField()
    # The continuation passage's vector (gist.continuation_text); b"" when the text has none; NULL until the
    # backfill has embedded it (gists stored before continuations existed get theirs without re-embedding).
    continuation = models.BinaryField(null=True, blank=True)

    class Meta:
        db_table = "search_gist"
        # Gists still waiting for their continuation: index_work_pending asks on every search page, and a
        # scan of every gist's row for NULL took 43 ms on 44,715 mails.
        indexes = [
            models.Index(
                fields=["document"], condition=models.Q(continuation__isnull=True), name="search_gist_no_continuation"
            )
        ]

    def __str__(self) -> str:
        return f"gist of {self.document_id} ({self.embedder})"


class SavedSearch(models.Model):
    """A user's named query in the search syntax (notmuch saved queries, paperless saved views): in the mailbox
    sidebar with its count, run by a click, and usable wherever a query is."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="saved_searches")
    name = models.CharField(max_length=100)
    query = models.CharField(max_length=1000)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "search_saved_search"
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="search_saved_search_unique_name")]
        ordering = ["name", "pk"]

    def __str__(self) -> str:
        return self.name
