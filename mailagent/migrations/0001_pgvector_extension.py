from __future__ import annotations

from typing import Any

from django.db import migrations


def create_vector_extension(apps: Any, schema_editor: Any) -> None:
    # pgvector is the production path for embeddings; SQLite keeps vectors as blobs instead.
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("CREATE EXTENSION IF NOT EXISTS vector")


class Migration(migrations.Migration):
    initial = True
    dependencies: list[tuple[str, str]] = []
    operations = [migrations.RunPython(create_vector_extension, migrations.RunPython.noop, elidable=False)]
