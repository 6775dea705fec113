"""Migration 0008 converts a store made before locations in place: every message keeps its row and gets the
location its folder and provider id name, the content key matches what a fresh parse of the same mail gives
(so the next sync recognises it instead of storing it again), and nothing is downloaded. SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.accounts.identity import dedupe_key_for_parsed
from apps.accounts.models import MailFolder, Message, MessageLocation
from apps.accounts.parsing import parse_message

BEFORE = [("mail", "0007_message_id_thread_index")]
RAW = (
    b"From: Alice <alice@example.test>\r\nTo: bob@example.test\r\nSubject: Quarterly numbers\r\n"
    b"Date: Mon, 04 Mar 2024 09:00:00 +0000\r\nMessage-ID: <q1@example.test>\r\n\r\nThe numbers are in.\r\n"
)


@pytest.mark.django_db(transaction=True)
def test_messages_stored_before_locations_get_one_each_and_keep_their_identity(user: Any) -> None:
    parsed = parse_message(RAW)
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    try:
        executor.migrate(BEFORE)
        old = executor.loader.project_state(BEFORE).apps
        account = old.get_model("mail", "MailAccount").objects.create(owner_id=user.pk, name="old", provider="imap")
        old.get_model("mail", "MailFolder").objects.create(account=account, name="INBOX", role="inbox")
        old_message = old.get_model("mail", "Message")
        common = {"account": account, "from_address": "alice@example.test", "subject": "Quarterly numbers"}
        old_message.objects.create(
            **common,
            provider_id="INBOX:7:3",
            dedupe_key="q1@example.test",
            message_id="q1@example.test",
            folder="INBOX",
            to=[{"name": "", "address": "bob@example.test"}],
            date=dt.datetime(2024, 3, 4, 9, 0, tzinfo=dt.UTC),
            body_text=parsed.body_text,
            seen=True,
        )
        # A folder known only as a message's folder name, and a message without a Message-ID.
        old_message.objects.create(
            **common, provider_id="Projects:9:1", dedupe_key="sha256:abc", folder="Projects", flagged=True
        )
        MigrationExecutor(connection).migrate(latest)
    finally:
        MigrationExecutor(connection).migrate(latest)

    first = Message.objects.get(message_id="q1@example.test")
    assert first.dedupe_key == dedupe_key_for_parsed(parsed)
    assert first.deleted_at is None
    place = MessageLocation.objects.get(message=first)
    assert (place.folder.name, place.provider_id, place.uid, place.seen, place.flagged) == (
        "INBOX",
        "INBOX:7:3",
        3,
        True,
        False,
    )
    second = Message.objects.get(provider_id="Projects:9:1")
    assert second.dedupe_key.startswith("#")
    assert MessageLocation.objects.get(message=second).flagged
    assert MailFolder.objects.filter(account_id=first.account_id, name="Projects").exists()
