"""search 0010 converts a mailbox indexed before it: every document gets its operator fields (search_headers)
and has:attachment by notmuch's definition, judged for parts stored before their disposition was recorded by
their file name, inline flag and type. Runs on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.accounts.models import Attachment
from apps.search import actions
from apps.search.models import SearchDocument, SearchHeaders
from apps.search.selectors import search_page

BEFORE = ("search", "0009_gist_continuation_index")


@pytest.mark.django_db(transaction=True)
def test_documents_indexed_before_get_operator_fields(make_message: Any, user: Any) -> None:
    orjan = make_message(
        "Re: Org chart", sender=("Örjan Lindqvist", "orjan@example.se"), to=[("Vince Kaminski", "vk@enron.com")]
    )
    signed = make_message("Signed", sender=("Anna", "anna@example.com"), attachments=[("signature.asc", None)])
    report = make_message("Report", sender=("Anna", "anna@example.com"), attachments=[("report.pdf", "Q1 numbers")])
    inline = make_message("Logo", sender=("Anna", "anna@example.com"), attachments=[("attachment-2.png", None)])
    Attachment.objects.filter(filename="signature.asc").update(mime_type="application/pgp-signature")
    actions.index_messages(message_ids=[orjan.pk, signed.pk, report.pk, inline.pk])
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    try:
        MigrationExecutor(connection).migrate([BEFORE])
        # As the store and the index left them: no disposition recorded, every part counted as an attachment.
        Attachment.objects.update(disposition=None)
        SearchDocument.objects.filter(message_id__in=[signed.pk, report.pk, inline.pk]).update(has_attachments=True)
        MigrationExecutor(connection).migrate(latest)
    finally:
        MigrationExecutor(connection).migrate(latest)

    assert SearchHeaders.objects.count() == SearchDocument.objects.count() == 5  # 4 messages, 1 attachment text
    headers = SearchHeaders.objects.get(document__kind="message", document__object_id=orjan.pk)
    assert headers.sender == " orjan lindqvist orjan example se <orjan@example.se> "
    assert headers.subject == " re org chart "

    def found(query: str) -> set[int]:
        page = search_page(query, user=user, mode="keyword", per_page=100, group=False)
        return {row.pk for row in page.rows}

    assert found("from:Örjan") == found("to:kaminski") == {orjan.pk}
    assert found("has:attachment") == {report.pk}
    assert found("-has:attachment") == {orjan.pk, signed.pk, inline.pk}
