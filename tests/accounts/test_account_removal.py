"""Removing a mail account: the confirmation page counts what goes, and removal deletes exactly that."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Q
from django.test import Client
from django.urls import reverse

from apps.accounts import actions
from apps.accounts.importers import import_path
from apps.accounts.models import Attachment, MailAccount, MailFolder, Message, Thread
from apps.orchestration import actions as orchestration_actions
from apps.orchestration.models import Director, Run
from apps.search.models import SearchDocument
from apps.workspaces import actions as workspace_actions
from apps.workspaces.models import InboxEntry, Workspace
from tests.accounts.test_pages import make_message, write_mbox

pytestmark = pytest.mark.django_db

SHARED = ("shared.pdf", b"%PDF-1.4 the same file in both accounts", "application/pdf")
OWN = ("own.txt", b"only in the archive that goes", "text/plain")


def import_into(account: MailAccount, tmp_path: Path, messages: list[Any], capture: Any) -> None:
    path = write_mbox(tmp_path / f"{account.name}.mbox", messages)
    with capture(execute=True):  # the messages-stored hook indexes (and routes) on commit
        import_path(account, path)


def documents(account: MailAccount) -> int:
    return SearchDocument.objects.filter(Q(account=account) | Q(message__account=account)).count()


@pytest.fixture
def two_accounts(user: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any) -> dict[str, Any]:
    doomed = actions.create_local_account(owner=user, name="Old archive")
    kept = actions.create_local_account(owner=user, name="Kept")
    import_into(
        doomed,
        tmp_path,
        [
            make_message("Invoice 7", "doomed-1@example.com", attachment=SHARED),
            make_message("Re: Invoice 7", "doomed-2@example.com", in_reply_to="doomed-1@example.com", attachment=OWN),
            make_message("Lunch?", "doomed-3@example.com"),
        ],
        django_capture_on_commit_callbacks,
    )
    import_into(
        kept,
        tmp_path,
        [make_message("Keep me", "kept-1@example.com", attachment=SHARED)],
        django_capture_on_commit_callbacks,
    )
    director = Director.objects.create(owner=user, name="Sorter")
    doomed_messages = list(Message.objects.filter(account=doomed).order_by("pk"))
    kept_message = Message.objects.get(account=kept)
    orchestration_actions.create_runs(
        requests=[
            orchestration_actions.RunRequest(message_id=m.pk, director_id=director.pk)
            for m in [*doomed_messages[:2], kept_message]
        ],
        fetch_cycle_id=None,
    )
    for run in Run.objects.select_related("message"):
        workspace = workspace_actions.open_workspace(
            owner=user,
            run_id=run.pk,
            message_id=run.message_id,
            director_id=director.pk,
            director_name=director.name,
            title=run.message.subject,
        )
        workspace_actions.push_inbox_entry(workspace=workspace, comments=f"About {run.message.subject}", run_id=run.pk)
    return {"doomed": doomed, "kept": kept, "director": director}


def test_the_confirmation_page_counts_what_goes_and_removal_deletes_exactly_that(
    logged_in_client: Client, two_accounts: dict[str, Any]
) -> None:
    doomed, kept = two_accounts["doomed"], two_accounts["kept"]
    cache = Path(settings.ATTACHMENT_CACHE_DIR)
    own_file = cache / Attachment.objects.get(message__account=doomed, filename="own.txt").cache_path
    shared_file = cache / Attachment.objects.get(message__account=kept).cache_path
    assert own_file.is_file() and shared_file.is_file()
    doomed_runs = Run.objects.filter(message__account=doomed)
    before = {
        "messages": Message.objects.filter(account=doomed).count(),
        "threads": Thread.objects.filter(account=doomed).count(),
        "folders": MailFolder.objects.filter(account=doomed).count(),
        "attachments": Attachment.objects.filter(message__account=doomed).count(),
        "attachment_files": 1,  # own.txt; shared.pdf is also used by "Kept"
        "runs": doomed_runs.count(),
        "workspaces": Workspace.objects.filter(run_id__in=doomed_runs.values("pk")).count(),
        "index_entries": documents(doomed),
    }
    assert before == {
        "messages": 3,
        "threads": 2,
        "folders": 1,
        "attachments": 2,
        "attachment_files": 1,
        "runs": 2,
        "workspaces": 2,
        "index_entries": before["index_entries"],
    }
    assert before["index_entries"] >= 3  # every message, plus attachment texts when extracted
    kept_before = (
        Message.objects.filter(account=kept).count(),
        documents(kept),
        Run.objects.filter(message__account=kept).count(),
    )

    url = reverse("mail:account_remove", args=[doomed.pk])
    assert f'href="{url}"' in logged_in_client.get(reverse("mail:account_detail", args=[doomed.pk])).content.decode()
    page = logged_in_client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    for key, count in before.items():
        assert f'data-testid="removal-{key}" data-count="{count}"' in html, key
    assert "with their items and 2 Inbox entries" in html
    assert "keeps no copy of the imported archive" in html

    wrong = logged_in_client.post(url, {"confirm": "old archive"})
    assert wrong.status_code == 422 and "Type the account name" in wrong.content.decode()
    assert Message.objects.filter(account=doomed).count() == 3

    done = logged_in_client.post(url, {"confirm": "Old archive"}, follow=True)
    assert done.redirect_chain[-1][0] == reverse("mail:accounts")
    assert "“Old archive” removed: 3 messages, 2 attachments and 1 cached attachment files deleted" in (
        done.content.decode()
    )
    assert not MailAccount.objects.filter(pk=doomed.pk).exists()
    assert not Message.objects.filter(account_id=doomed.pk).exists()
    assert not Thread.objects.filter(account_id=doomed.pk).exists()
    assert not Attachment.objects.filter(message__account_id=doomed.pk).exists()
    assert not SearchDocument.objects.filter(Q(account_id=doomed.pk) | Q(message__account_id=doomed.pk)).exists()
    assert Run.objects.count() == 1 and Workspace.objects.filter(run_id__isnull=False).count() == 1
    assert InboxEntry.objects.count() == 1
    assert not own_file.exists() and shared_file.is_file()
    # The other account is untouched.
    assert (
        Message.objects.filter(account=kept).count(),
        documents(kept),
        Run.objects.filter(message__account=kept).count(),
    ) == kept_before
    assert logged_in_client.get(url).status_code == 404


def test_another_users_account_is_404_and_stays(
    two_accounts: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    stranger = get_user_model().objects.create_user(username="x", email="x@example.com", password="x-Pass-12345")
    other = Client()
    other.force_login(stranger)
    url = reverse("mail:account_remove", args=[two_accounts["doomed"].pk])
    assert other.get(url).status_code == 404
    assert other.post(url, {"confirm": "Old archive"}).status_code == 404
    assert Message.objects.filter(account=two_accounts["doomed"]).count() == 3


def test_an_account_being_synced_is_not_removed(logged_in_client: Client, two_accounts: dict[str, Any]) -> None:
    from apps.accounts.sync import acquire_sync_lock, release_sync_lock

    doomed = two_accounts["doomed"]
    token = acquire_sync_lock(doomed.pk)
    assert token is not None
    try:
        url = reverse("mail:account_remove", args=[doomed.pk])
        response = logged_in_client.post(url, {"confirm": "Old archive"}, follow=True)
        assert "is being synced or imported right now" in response.content.decode()
        assert Message.objects.filter(account=doomed).count() == 3
    finally:
        release_sync_lock(doomed.pk, token)
