"""Workspace item content and Inbox entries are encrypted at rest (AES-256-GCM, like secrets): the columns
hold no plaintext, the app and its API read them back, the Results search (labels, paths) still finds items,
the data migration converts plaintext rows (and back), and key rotation covers them."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import override_settings

from apps.orchestration.models import Run
from apps.results.selectors import ResultFilters, filtered_runs, items_for_filters
from apps.workspaces import actions, selectors
from apps.workspaces.models import InboxEntry, WorkspaceItem
from mailagent.crypto import key_id_for, stored_key_id
from mailagent.encrypted_columns import encrypt_columns
from mailagent.pytest_env import TEST_ENCRYPTION_KEY

pytestmark = pytest.mark.django_db

KEY_B = "b2" * 32
ASK = {"question": "Pay invoice 4711-SECRET now?", "options": ["Yes", "Later"]}


def raw_row(table: str, columns: str, pk: Any) -> tuple[Any, ...]:
    if table == "workspaces_inboxentry" and connection.vendor == "sqlite":
        pk = pk.hex  # Django stores UUIDs as 32 hex digits on SQLite
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM {table} WHERE id = %s", [pk])  # noqa: S608
        return tuple(cursor.fetchone())


def raw_item(item: WorkspaceItem) -> tuple[Any, ...]:
    return raw_row("workspaces_workspaceitem", "description, data", item.pk)


def raw_entry(entry: InboxEntry) -> tuple[Any, ...]:
    return raw_row("workspaces_inboxentry", "comments, ask, reply", entry.pk)


def make_item(workspace: Any, n: int = 0) -> WorkspaceItem:
    return actions.add_item(
        workspace=workspace,
        label=f"Summary {n}",
        description="About invoice 4711-SECRET",
        data=f"# Invoice 4711-SECRET\n\nAmount due: 1,234.00 EUR ({n})",
        mime_type="text/markdown",
        path=f"reports/summary-{n}.md",
    )


def make_entry(workspace: Any) -> InboxEntry:
    return actions.push_inbox_entry(workspace=workspace, comments="Invoice 4711-SECRET is overdue", ask=ASK)


def assert_no_plaintext(values: tuple[Any, ...]) -> None:
    for value in values:
        if value is not None:
            assert str(value).startswith("enc1:"), value
            assert "4711-SECRET" not in str(value) and "Invoice" not in str(value)


def test_item_content_holds_no_plaintext_and_reads_back(workspace: Any) -> None:
    item = make_item(workspace)
    assert_no_plaintext(raw_item(item))
    stored = WorkspaceItem.objects.get(pk=item.pk)
    assert stored.data == "# Invoice 4711-SECRET\n\nAmount due: 1,234.00 EUR (0)"
    assert stored.description == "About invoice 4711-SECRET"
    actions.update_item(
        item_id=item.pk, workspace=workspace, patch={"data": "Paid: 4711-SECRET"}, expected_revision=None, actor={}
    )
    assert_no_plaintext(raw_item(item))
    as_json = selectors.item_json(WorkspaceItem.objects.get(pk=item.pk))
    assert as_json["data"] == "Paid: 4711-SECRET" and as_json["description"] == "About invoice 4711-SECRET"
    # Label, path and type stay plaintext: they are what listings and searches filter on in SQL.
    assert raw_row("workspaces_workspaceitem", "label, path", item.pk) == ("Summary 0", "reports/summary-0.md")


def test_inbox_entries_hold_no_plaintext_and_read_back(workspace: Any) -> None:
    entry = make_entry(workspace)
    comments, ask, reply = raw_entry(entry)
    assert_no_plaintext((comments, ask))
    assert reply is not None  # an empty reply is encrypted too, so a row does not tell whether it was answered
    actions.reply_to_entry(entry=entry, text="Yes, pay 4711-SECRET")
    assert_no_plaintext(raw_entry(entry))
    stored = InboxEntry.objects.get(pk=entry.pk)
    assert (stored.comments, stored.ask, stored.reply) == (
        "Invoice 4711-SECRET is overdue",
        ASK,
        "Yes, pay 4711-SECRET",
    )
    entry_json = selectors.entry_json(stored)
    assert entry_json["comments"] == "Invoice 4711-SECRET is overdue" and entry_json["ask"] == ASK
    # The reply became a workspace item: encrypted as well.
    reply_item = WorkspaceItem.objects.get(workspace=workspace, path=f"inbox/replies/{entry.pk}.md")
    assert_no_plaintext(raw_item(reply_item))


def test_results_search_still_finds_items_by_label_and_path(user: Any, director: Any, store_mail: Any) -> None:
    run = Run.objects.create(message=store_mail(subject="Hello"), director=director("Bookkeeper"))
    workspace = actions.open_workspace(
        owner=user, run_id=run.pk, message_id=run.message_id, director_id=run.director_id, director_name="B", title="T"
    )
    item = make_item(workspace, 7)
    for query in ("summary 7", "reports/summary-7"):
        filters = ResultFilters(q=query)
        assert list(filtered_runs(user=user, filters=filters)) == [run]
        assert [found.pk for found in items_for_filters(user=user, filters=filters)] == [item.pk]
    assert list(filtered_runs(user=user, filters=ResultFilters(q="nothing like it"))) == []


def test_rotation_reencrypts_items_and_inbox_entries(workspace: Any) -> None:
    item, entry = make_item(workspace), make_entry(workspace)
    with override_settings(VX_MAILAGENT_KEY=f"{KEY_B},{TEST_ENCRYPTION_KEY}"):
        call_command("reencrypt_secrets", stdout=StringIO(), stderr=StringIO())
        new_id = key_id_for(bytes.fromhex(KEY_B))
        values = [*raw_item(item), *(v for v in raw_entry(entry) if v is not None)]
        assert {stored_key_id(value) for value in values} == {new_id}
    with override_settings(VX_MAILAGENT_KEY=KEY_B):  # the old key is no longer needed
        stored = WorkspaceItem.objects.get(pk=item.pk)
        assert stored.data.startswith("# Invoice 4711-SECRET") and stored.description == "About invoice 4711-SECRET"
        loaded = InboxEntry.objects.get(pk=entry.pk)
        assert (loaded.comments, loaded.ask) == ("Invoice 4711-SECRET is overdue", ASK)


@pytest.mark.django_db(transaction=True)
def test_the_data_migration_encrypts_plaintext_rows_and_back(workspace: Any) -> None:
    items = [make_item(workspace, n) for n in range(3)]
    entry = make_entry(workspace)
    executor = MigrationExecutor(connection)
    executor.migrate([("workspaces", "0003_mailbox_tokens_mcp_calls")])  # backwards: decrypts, then JSON again
    try:
        assert raw_item(items[0]) == (
            "About invoice 4711-SECRET",
            "# Invoice 4711-SECRET\n\nAmount due: 1,234.00 EUR (0)",
        )
        comments, ask, _ = raw_entry(entry)
        assert comments == "Invoice 4711-SECRET is overdue" and "4711-SECRET" in str(ask)
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes("workspaces"))
    for item in items:
        assert_no_plaintext(raw_item(item))
    assert_no_plaintext(raw_entry(entry))
    assert [WorkspaceItem.objects.get(pk=item.pk).data for item in items] == [item.data for item in items]
    loaded = InboxEntry.objects.get(pk=entry.pk)
    assert (loaded.comments, loaded.ask) == ("Invoice 4711-SECRET is overdue", ASK)
    # Running it again changes nothing.
    assert encrypt_columns(WorkspaceItem, ["description", "data"], using="default") == 0
    assert encrypt_columns(InboxEntry, ["comments", "ask", "reply"], using="default") == 0
