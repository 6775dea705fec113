"""Vendor-specific index structures; each database runs only its own half, the other is a no-op.

SQLite: the FTS5 table (folded text, unicode61 remove_diacritics 2) whose rows follow search_document
deletes through a trigger, and a trigger that changes the state's generation whenever chunks go, so
in-process vector matrices notice deletes made by cascades and by other processes.
PostgreSQL: the tsvector column + GIN index, and the HNSW cosine index for the default 512-dim embedder
(rebuilt for another dimension when the embedder changes, see backends/postgres.py).
"""

from django.db import migrations

SQLITE_FORWARD = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5("
    "title, people, body, tokenize = 'unicode61 remove_diacritics 2')",
    "CREATE TRIGGER IF NOT EXISTS search_document_fts_delete AFTER DELETE ON search_document BEGIN"
    " DELETE FROM search_fts WHERE rowid = old.id; END",
    "CREATE TRIGGER IF NOT EXISTS search_chunk_generation AFTER DELETE ON search_chunk BEGIN"
    " INSERT INTO search_index_state (id, generation, embedder, dimension) VALUES (1, lower(hex(randomblob(8))), '', 0)"
    " ON CONFLICT (id) DO UPDATE SET generation = excluded.generation; END",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS search_chunk_generation",
    "DROP TRIGGER IF EXISTS search_document_fts_delete",
    "DROP TABLE IF EXISTS search_fts",
]
POSTGRES_FORWARD = [
    "ALTER TABLE search_document ADD COLUMN IF NOT EXISTS tsv tsvector",
    "CREATE INDEX IF NOT EXISTS search_document_tsv ON search_document USING gin (tsv)",
    "CREATE INDEX IF NOT EXISTS search_chunk_embedding_hnsw ON search_chunk"
    " USING hnsw ((embedding::vector(512)) vector_cosine_ops) WHERE vector_dims(embedding) = 512",
]
POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS search_chunk_embedding_hnsw",
    "DROP INDEX IF EXISTS search_document_tsv",
    "ALTER TABLE search_document DROP COLUMN IF EXISTS tsv",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("search", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            _run({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
            elidable=False,
        ),
    ]
