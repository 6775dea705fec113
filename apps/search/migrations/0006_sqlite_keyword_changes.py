"""SQLite: a log of the search documents whose text or filter columns changed or that were deleted, so each
process's in-memory keyword index (backends/keyword_index.py) re-reads only those documents. New documents
need no entry: their ids are above the index's newest id. Writers prune the log (see
keyword_index.CHANGE_LOG_KEEP); a process that fell behind the pruned part reloads in full.
PostgreSQL ranks in the database (ts_rank_cd over its GIN index): nothing to do there.
"""

from django.db import migrations

FORWARD = [
    "CREATE TABLE IF NOT EXISTS search_keyword_change (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " document_id INTEGER NOT NULL)",
    "CREATE TRIGGER IF NOT EXISTS search_document_keyword_delete AFTER DELETE ON search_document BEGIN"
    " INSERT INTO search_keyword_change (document_id) VALUES (old.id); END",
    "CREATE TRIGGER IF NOT EXISTS search_document_keyword_update AFTER UPDATE OF"
    " title, people, body, account_id, owner_id, message_id, kind, date, has_attachments ON search_document"
    " WHEN old.title IS NOT new.title OR old.people IS NOT new.people OR old.body IS NOT new.body"
    " OR old.account_id IS NOT new.account_id OR old.owner_id IS NOT new.owner_id"
    " OR old.message_id IS NOT new.message_id OR old.kind IS NOT new.kind OR old.date IS NOT new.date"
    " OR old.has_attachments IS NOT new.has_attachments"
    " BEGIN INSERT INTO search_keyword_change (document_id) VALUES (new.id); END",
]
BACKWARD = [
    "DROP TRIGGER IF EXISTS search_document_keyword_update",
    "DROP TRIGGER IF EXISTS search_document_keyword_delete",
    "DROP TABLE IF EXISTS search_keyword_change",
]


def _run(statements: list[str]):  # type: ignore[no-untyped-def]
    def run(apps, schema_editor):  # type: ignore[no-untyped-def]
        if schema_editor.connection.vendor == "sqlite":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("search", "0005_sqlite_filter_index")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD), elidable=False)]
