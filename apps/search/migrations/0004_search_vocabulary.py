"""The word list behind "did you mean": an fts5vocab table over search_fts on SQLite; on PostgreSQL a table the
backend refills from ts_stat over the tsvectors (a materialized view cannot: REFRESH runs with an empty
search_path, where ts_stat's query does not find search_document)."""

from django.db import migrations

SQLITE_FORWARD = ["CREATE VIRTUAL TABLE IF NOT EXISTS search_fts_vocab USING fts5vocab(search_fts, row)"]
SQLITE_BACKWARD = ["DROP TABLE IF EXISTS search_fts_vocab"]
POSTGRES_FORWARD = [
    "CREATE TABLE IF NOT EXISTS search_vocabulary (word text NOT NULL, ndoc integer NOT NULL)",
    "CREATE INDEX IF NOT EXISTS search_vocabulary_word ON search_vocabulary (word text_pattern_ops)",
]
POSTGRES_BACKWARD = ["DROP TABLE IF EXISTS search_vocabulary"]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("search", "0003_mark_indexed_messages")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            _run({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
            elidable=False,
        ),
    ]
