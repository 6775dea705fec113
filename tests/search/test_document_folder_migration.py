"""Migration 0011 takes the folder out of mail documents in place: the stored content hash becomes what the
current code computes for the same message (so the next re-index finds it unchanged), and the embeddings and
gist of the old text stay current (nothing is embedded again). SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.search.documents import documents_for_messages
from apps.search.models import SearchDocument, SearchGist

BEFORE = [("search", "0010_search_headers")]


@pytest.mark.django_db(transaction=True)
def test_mail_documents_lose_their_folder_and_keep_their_vectors(make_message: Any, index_all: Any) -> None:
    message = make_message("Quarterly numbers", "The numbers are in, see the attached sheet.", folder="Projects")
    index_all(message)
    document = SearchDocument.objects.get(kind="message", object_id=message.pk)
    embedded_with = document.embedded_with
    current_hash = document.content_hash
    assert embedded_with
    # Its gist as the backfill stores it (the vector's values do not matter to the migration).
    SearchGist.objects.create(document=document, embedder="gist-model", content_hash=current_hash, vector=b"\0" * 16)
    # The document as the code before this change wrote it: the message's folder inside and in the hash.
    (fresh,), _ = documents_for_messages([message.pk])
    old_hash = replace(fresh, folder="Projects").content_hash()
    assert old_hash != current_hash
    SearchDocument.objects.filter(pk=document.pk).update(folder="Projects", content_hash=old_hash)
    SearchGist.objects.filter(document=document).update(content_hash=old_hash)

    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    try:
        executor.migrate(BEFORE)
        MigrationExecutor(connection).migrate(latest)
    finally:
        MigrationExecutor(connection).migrate(latest)

    document.refresh_from_db()
    assert (document.folder, document.content_hash, document.embedded_with) == ("", current_hash, embedded_with)
    assert SearchGist.objects.get(document=document).content_hash == current_hash
