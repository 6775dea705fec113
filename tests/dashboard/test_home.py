"""Home: the dashboard of what needs attention, recent runs, last sync per account, counts and the setup checklist.

State is made through the product's actions (and a real IMAP sync against Dovecot for an account whose password
is wrong); pages go through the real URLconf."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from apps.accounts.actions import create_imap_account, create_local_account
from apps.accounts.sync import sync_account
from apps.dashboard.selectors import dashboard_for_user
from apps.llm.models import ApiConfig
from apps.orchestration.actions import RunRequest, claim_run, create_director, create_runs, finish_run
from apps.orchestration.models import RunStatus
from apps.organization import actions as organization_actions
from apps.organization.library import get_library
from apps.organization.roots import library_base
from apps.organization.suggesting import suggest_for_file
from apps.replies.actions import create_draft_from_item
from apps.routing.actions import create_filter
from apps.workspaces.actions import add_item, create_user_workspace, open_workspace, push_inbox_entry
from tests.conftest import USER_PASSWORD, StoreMail
from tests.fakes.dovecot import Mailbox
from tests.services import free_port

pytestmark = pytest.mark.django_db

STEP = re.compile(r'<li class="checklist-step( is-done)?" data-step="(\w+)">')


def counts_on(html: str) -> dict[str, int]:
    return {name: int(value) for name, value in re.findall(r'<dd data-count="(\w+)">(\d+)</dd>', html)}


def attention_kinds(html: str) -> list[str]:
    return re.findall(r'<li class="attention-item[^"]*" data-kind="([\w-]+)">', html)


def give_user_a_world(*, owner: Any, store_mail: StoreMail, mailbox: Mailbox, library_root: Path) -> None:
    """An owner with mail in a local archive, a model, a director with a filter, a failed and a completed run
    (with a reply draft from its result), an unread Inbox entry, a pending folder suggestion, an IMAP account
    whose password is wrong and one whose server is down."""
    archive = create_local_account(owner=owner, name=f"archive-{owner.username}", address=f"{owner.username}@ex.com")
    first = store_mail(subject="Invoice 42 overdue", target=archive)
    second = store_mail(subject="Lunch on Friday?", target=archive)
    message_ids = [first.pk, second.pk]
    model = ApiConfig.objects.create(owner=owner, name="local", base_url="http://127.0.0.1:9/v1", model="m")
    director = create_director(owner=owner, name=f"Clients of {owner.username}")
    director.api_config = model
    director.save(update_fields=["api_config"])
    create_filter(director=director, field_name="subject", regex_text="invoice")
    run_ids = create_runs(
        requests=[RunRequest(message_id=pk, director_id=director.pk) for pk in message_ids], fetch_cycle_id=None
    )
    for run_id, status in zip(run_ids, [RunStatus.FAILED, RunStatus.COMPLETED], strict=False):
        run = claim_run(run_id=run_id)
        assert run is not None
        finish_run(run=run, status=status, error="The endpoint refused the connection" if status == "failed" else "")
    result = open_workspace(
        owner=owner,
        run_id=run_ids[1],
        message_id=second.pk,
        director_id=director.pk,
        director_name=director.name,
        title=second.subject,
    )
    item = add_item(workspace=result, data="Friday works for me.", label="reply", mime_type="text/plain")
    create_draft_from_item(owner=owner, item=item)
    workspace = create_user_workspace(owner=owner, label="Claude Desktop")
    push_inbox_entry(workspace=workspace, comments="Summary of the week.")
    organization_actions.update_settings(owner=owner, changes={"root": str(library_base(owner.pk) / library_root.name)})
    library = get_library(owner=owner)
    upload = organization_actions.save_upload(library=library, name="statement.txt", chunks=[b"Bank statement"])
    assert suggest_for_file(file=upload) is not None
    wrong_password = create_imap_account(
        owner=owner,
        name=f"work-{owner.username}",
        address=mailbox.username,
        host="127.0.0.1",
        port=mailbox.server.port,
        security="none",
        username=mailbox.username,
        password="not-the-password",
    )
    assert sync_account(wrong_password.pk).error_category == "auth"
    down = create_imap_account(
        owner=owner,
        name=f"old-{owner.username}",
        address="me@old.example",
        host="127.0.0.1",
        port=free_port(),
        security="none",
        username="me",
        password="x",
    )
    assert sync_account(down.pk).error_category == "network"


def test_a_new_user_sees_the_setup_checklist_and_empty_states_that_say_what_to_do(
    logged_in_client: Client,
) -> None:
    response = logged_in_client.get("/")
    assert response.status_code == 200
    assert response.templates[0].name == "dashboard/pages/home.html"
    html = response.content.decode()
    assert 'data-testid="setup-checklist"' in html
    steps = STEP.findall(html)
    assert [key for _, key in steps] == ["account", "api_config", "director", "filter", "run"]
    assert all(done == "" for done, _ in steps)
    assert "0 of 5 done" in html
    # Each open step links to a page that does it (the wizard's step when the wizard is installed).
    step_links = re.findall(r'<a class="button small" href="([^"]+)">', html.split('data-testid="setup-checklist"')[1])
    assert len(step_links) == 5
    for link in step_links:
        assert logged_in_client.get(link, follow=True).status_code == 200, link
    assert 'data-testid="nothing-needs-attention"' in html
    assert 'data-testid="no-runs"' in html and "create a director and a filter" in html
    assert 'data-testid="no-accounts"' in html and 'on <a href="/mail/accounts/">Accounts</a>' in html
    assert counts_on(html) == {"messages": 0, "accounts": 0, "directors": 0, "filters": 0, "runs": 0, "drafts": 0}


def test_a_user_with_data_sees_what_needs_attention_recent_runs_and_last_syncs(
    client: Client, user: Any, store_mail: StoreMail, imap_mailbox: Mailbox, tmp_path: Path
) -> None:
    give_user_a_world(owner=user, store_mail=store_mail, mailbox=imap_mailbox, library_root=tmp_path / "library")
    client.force_login(user)
    html = client.get("/").content.decode()

    # Every setup step is done: the checklist is gone.
    assert 'data-testid="setup-checklist"' not in html
    assert attention_kinds(html) == ["reauth", "inbox", "drafts", "suggestions", "failed_runs", "sync-error"]
    assert f"<strong>work-{user.username}</strong> needs its password again" in html
    assert '<span class="attention-count">1</span> unread Inbox entry' in html
    assert '<span class="attention-count">1</span> reply draft not sent yet' in html
    assert '<span class="attention-count">1</span> folder suggestion to review' in html
    assert '<a href="/runs/?status=failed"><span class="attention-count">1</span> failed run in the last 7 days' in html
    assert f"<strong>old-{user.username}</strong>: the last sync failed" in html

    assert counts_on(html) == {"messages": 2, "accounts": 4, "directors": 1, "filters": 1, "runs": 2, "drafts": 1}
    recent = html.split('data-testid="recent-runs"', 1)[1].split("</section>", 1)[0]
    assert "Invoice 42 overdue" in recent and "Lunch on Friday?" in recent
    assert '<span class="badge error"' in recent and '<span class="badge ok"' in recent
    syncs = html.split('data-testid="home-accounts"', 1)[1].split("</section>", 1)[0]
    assert f"archive-{user.username}" in syncs and "Local archive" in syncs  # an imported archive claims no sync
    assert syncs.count('<span class="badge error">Error</span>') == 2


def test_another_users_data_never_reaches_the_dashboard(
    client: Client, user: Any, store_mail: StoreMail, imap_mailbox: Mailbox, tmp_path: Path
) -> None:
    other = get_user_model().objects.create_user(username="other", email="other@example.com", password=USER_PASSWORD)
    give_user_a_world(owner=other, store_mail=store_mail, mailbox=imap_mailbox, library_root=tmp_path / "other-lib")
    client.force_login(user)
    html = client.get("/").content.decode()
    # The user's own (empty) archive only.
    assert counts_on(html) == {"messages": 0, "accounts": 1, "directors": 0, "filters": 0, "runs": 0, "drafts": 0}
    assert attention_kinds(html) == []
    for name in ("Clients of other", "work-other", "old-other", "Summary of the week"):
        assert name not in html
    assert "1 of 5 done" in html


def test_the_dashboard_reads_in_three_queries_however_much_data(  # the counts, the accounts, the recent runs
    user: Any, store_mail: StoreMail, imap_mailbox: Mailbox, tmp_path: Path, django_assert_num_queries: Any
) -> None:
    fresh = get_user_model().objects.create_user(username="fresh", email="fresh@example.com", password=USER_PASSWORD)
    with django_assert_num_queries(1):  # a new user: the counts say there is nothing else to read
        dashboard_for_user(user=fresh)
    give_user_a_world(owner=user, store_mail=store_mail, mailbox=imap_mailbox, library_root=tmp_path / "library")
    for number in range(3):
        create_imap_account(
            owner=user,
            name=f"extra-{number}",
            address="x@example.com",
            host="127.0.0.1",
            port=1,
            security="none",
            username="x",
            password="x",
        )
    with django_assert_num_queries(3):
        dashboard = dashboard_for_user(user=user)
    assert len(dashboard.accounts) == 7 and len(dashboard.recent_runs) == 2
    assert [a.name for a in dashboard.reauth_accounts] == [f"work-{user.username}"]


def test_skipping_the_setup_wizard_hides_the_checklist_and_the_wizard_stays_reachable(
    logged_in_client: Client,
) -> None:
    html = logged_in_client.get("/").content.decode()
    assert 'data-testid="setup-checklist"' in html and 'data-testid="skip-setup"' in html
    skip = re.search(r'<form method="post" action="([^"]+)" class="checklist-skip">', html)
    assert skip
    assert logged_in_client.post(skip.group(1)).status_code == 302
    html = logged_in_client.get("/").content.decode()
    assert 'data-testid="setup-checklist"' not in html
    wizard = re.search(r'<a class="button secondary" href="([^"]+)" data-testid="open-setup">Setup wizard</a>', html)
    assert wizard and logged_in_client.get(wizard.group(1), follow=True).status_code == 200
