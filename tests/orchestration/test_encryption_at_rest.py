"""Transcripts and memories are encrypted at rest (AES-256-GCM, like secrets): the columns hold no plaintext,
the app reads them back, memory search still finds words, the data migration converts plaintext rows (and
back), and key rotation covers them."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import override_settings

from apps.orchestration.models import Conversation, Memory, MemoryScope, Run, ThreadKind
from apps.orchestration.selectors import list_memories_for_user
from apps.orchestration.tools.memory import find_memories
from mailagent.crypto import KEY_MISSING_LABEL, encrypt_value, stored_key_id
from mailagent.encrypted_columns import encrypt_columns
from mailagent.pytest_env import TEST_ENCRYPTION_KEY

pytestmark = pytest.mark.django_db

KEY_A = "a1" * 32
KEY_B = "b2" * 32
TRANSCRIPT = [
    {"role": "system", "content": "You are the director."},
    {"role": "user", "content": "New email: the invoice 4711-SECRET is overdue"},
    {"role": "assistant", "content": "Filed under invoices."},
]


def raw_column(table: str, column: str, pk: Any) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column} FROM {table} WHERE id = %s", [pk])  # noqa: S608
        return str(cursor.fetchone()[0])


@pytest.fixture
def run(director: Any, store_mail: Any) -> Run:
    return Run.objects.create(message=store_mail(subject="Invoice"), director=director("Bookkeeper"))


def make_thread(run: Run) -> Conversation:
    return Conversation.objects.create(run=run, kind=ThreadKind.DIRECTOR, director=run.director, messages=TRANSCRIPT)


def make_memory(run: Run, content: str = "Client Seven pays late: invoice 4711-SECRET") -> Memory:
    return Memory.objects.create(
        owner=run.director.owner, scope=MemoryScope.GLOBAL, content=content, tags=["billing"], source_run=run
    )


def test_the_columns_hold_no_plaintext_and_the_app_reads_them_back(run: Run) -> None:
    thread = make_thread(run)
    memory = make_memory(run)
    for table, column, pk in (
        ("orchestration_conversation", "messages", thread.pk),
        ("orchestration_memory", "content", memory.pk),
    ):
        stored = raw_column(table, column, pk)
        assert stored.startswith("enc1:")
        assert "4711-SECRET" not in stored and "invoice" not in stored
    assert Conversation.objects.get(pk=thread.pk).messages == TRANSCRIPT
    assert Memory.objects.get(pk=memory.pk).content == "Client Seven pays late: invoice 4711-SECRET"
    # The transcript saved step by step by the engine's own UPDATE is encrypted too.
    from apps.orchestration.engine import _save_fields

    thread.messages = [*TRANSCRIPT, {"role": "assistant", "content": "Reminder drafted for 4711-SECRET"}]
    _save_fields(thread, ["messages"])
    assert "Reminder" not in raw_column("orchestration_conversation", "messages", thread.pk)
    assert Conversation.objects.get(pk=thread.pk).messages[-1]["content"] == "Reminder drafted for 4711-SECRET"


def test_memory_search_finds_words_in_the_encrypted_content(run: Run, user: Any) -> None:
    make_memory(run, "Client Seven pays late")
    make_memory(run, "Tone: formal, 50% discount for ÜBER clients")
    make_memory(run, "client seven prefers calls")
    owner = {"owner_id": user.pk, "director_id": run.director.pk}
    found = find_memories(by_agent=False, memory_access=True, owner_kind="", words=["CLIENT", "seven"], **owner)
    assert sorted(m.content for m in found) == ["Client Seven pays late", "client seven prefers calls"]
    found = find_memories(by_agent=False, memory_access=True, owner_kind="", words=["50%", "über"], **owner)
    assert [m.content for m in found] == ["Tone: formal, 50% discount for ÜBER clients"]
    assert len(find_memories(by_agent=False, memory_access=True, owner_kind="", words=[], **owner)) == 3
    assert [m.content for m in list_memories_for_user(user=user, query="prefers CALLS")] == [
        "client seven prefers calls"
    ]
    assert len(list_memories_for_user(user=user)) == 3


def test_memories_of_another_owner_stay_invisible(run: Run, django_user_model: Any) -> None:
    make_memory(run, "Client Seven pays late")
    stranger = django_user_model.objects.create_user(username="stranger", password="x" * 20)
    assert list_memories_for_user(user=stranger, query="client") == []
    found = find_memories(
        by_agent=False, memory_access=True, owner_kind="", words=["client"], owner_id=stranger.pk, director_id=0
    )
    assert found == []


def test_memories_page_searches_encrypted_content(run: Run, logged_in_client: Any) -> None:
    make_memory(run, "Client Seven pays late")
    make_memory(run, "Tone: formal")
    page = logged_in_client.get("/runs/memory/", {"q": "seven"}).content.decode()
    assert "Client Seven pays late" in page and "Tone: formal" not in page


def test_an_undecryptable_memory_matches_no_search(run: Run, user: Any) -> None:
    with override_settings(VX_MAILAGENT_KEY=KEY_A):
        make_memory(run, "Client Seven pays late")
    with override_settings(VX_MAILAGENT_KEY=KEY_B):
        assert list_memories_for_user(user=user, query="cannot decrypt") == []
        assert len(list_memories_for_user(user=user)) == 1


def test_rotation_reencrypts_transcripts_and_memories(run: Run) -> None:
    thread, memory = make_thread(run), make_memory(run)  # under the test key, like everything else stored
    with override_settings(VX_MAILAGENT_KEY=f"{KEY_B},{TEST_ENCRYPTION_KEY}"):
        out = StringIO()
        call_command("reencrypt_secrets", stdout=out, stderr=StringIO())
        assert "Re-encrypted" in out.getvalue()
        new_id = stored_key_id(raw_column("orchestration_conversation", "messages", thread.pk))
        assert stored_key_id(raw_column("orchestration_memory", "content", memory.pk)) == new_id
    with override_settings(VX_MAILAGENT_KEY=KEY_B):  # the old key is no longer needed
        assert Conversation.objects.get(pk=thread.pk).messages == TRANSCRIPT
        assert Memory.objects.get(pk=memory.pk).content == "Client Seven pays late: invoice 4711-SECRET"


@pytest.mark.django_db(transaction=True)
def test_the_data_migration_encrypts_plaintext_rows_and_back(run: Run) -> None:
    thread = make_thread(run)
    memories = [make_memory(run, f"memory {n}: invoice 4711-SECRET") for n in range(3)]
    executor = MigrationExecutor(connection)
    executor.migrate([("orchestration", "0006_api_config_in_llm")])  # backwards: decrypts, then JSON again
    try:
        assert "4711-SECRET" in raw_column("orchestration_conversation", "messages", thread.pk)
        for memory in memories:
            assert raw_column("orchestration_memory", "content", memory.pk).startswith("memory ")
        # A run killed midway: one memory was already encrypted by it.
        with connection.cursor() as cursor:
            sealed = encrypt_value("memory 0: invoice 4711-SECRET", associated_data="orchestration.memory.content")
            cursor.execute("UPDATE orchestration_memory SET content = %s WHERE id = %s", [sealed, memories[0].pk])
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes("orchestration"))
    assert raw_column("orchestration_memory", "content", memories[0].pk) == sealed  # recognised, not re-encrypted
    for table, column, pk in (
        ("orchestration_conversation", "messages", thread.pk),
        *(("orchestration_memory", "content", memory.pk) for memory in memories),
    ):
        assert raw_column(table, column, pk).startswith("enc1:")
        assert "4711-SECRET" not in raw_column(table, column, pk)
    assert Conversation.objects.get(pk=thread.pk).messages == TRANSCRIPT
    assert [Memory.objects.get(pk=m.pk).content for m in memories] == [m.content for m in memories]
    # Running it again changes nothing.
    assert encrypt_columns(Memory, ["content"], using="default") == 0
    assert encrypt_columns(Conversation, ["messages"], using="default") == 0


def test_a_transcript_without_its_key_shows_why_and_is_not_continued(run: Run, logged_in_client: Any) -> None:
    thread = make_thread(run)
    with override_settings(VX_MAILAGENT_KEY=KEY_B):
        loaded = Conversation.objects.get(pk=thread.pk)
        assert loaded.transcript == [{"role": "system", "content": KEY_MISSING_LABEL}]
        assert KEY_MISSING_LABEL in (loaded.undecryptable_reason() or "")
        page = logged_in_client.get(f"/runs/{run.pk}/")
        assert page.status_code == 200 and KEY_MISSING_LABEL in page.content.decode()
