"""“Route the imported mail through my filters” on the import form: off by default (an old archive starts no
runs), on = every imported email goes through the filters whatever its date, recorded on its outbox row so a
crash between the commit and the routing hook loses nothing."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from apps.accounts import actions, outbox
from apps.accounts.importers import import_path
from apps.accounts.models import MailAccount, Message, MessageOutbox
from apps.orchestration.models import Director, Run
from apps.routing import actions as routing_actions
from tests.accounts.test_pages import make_message, write_mbox

pytestmark = pytest.mark.django_db


def flagged(ids: list[int]) -> set[int]:
    rows = MessageOutbox.objects.filter(message_id__in=ids, route_regardless_of_date=True)
    return set(rows.values_list("message_id", flat=True))


@pytest.fixture
def invoices(user: Any) -> Director:
    director = Director.objects.create(owner=user, name="Invoices")
    # Made now: the archive's 2026-11 mail below is older than the filter.
    routing_actions.create_filter(director=director, field_name="subject", regex_text="invoice")
    return director


def archive(tmp_path: Path, name: str, prefix: str) -> bytes:
    path = write_mbox(
        tmp_path / name,
        [
            make_message(f"Invoice {prefix}-1", f"{prefix}-1@example.com"),
            make_message(f"Invoice {prefix}-2", f"{prefix}-2@example.com"),
            make_message(f"Lunch {prefix}", f"{prefix}-3@example.com"),
        ],
    )
    return path.read_bytes()


def upload(client: Client, content: bytes, name: str, capture: Any, **extra: str) -> str:
    data = {"file": SimpleUploadedFile(name, content), "new_account_name": "Old mail", **extra}
    # The import job (queued on commit, run inline: django-q2's sync mode in tests) and the messages-stored
    # hook (index, route) run on commit; the Accounts page then shows the job's outcome.
    with capture(execute=True):
        assert client.post(reverse("mail:account_import"), data).status_code == 302
    response = client.get(reverse("mail:accounts"))
    assert response.status_code == 200
    return response.content.decode()


def test_the_import_form_routes_only_when_asked(
    logged_in_client: Client, invoices: Director, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    form = logged_in_client.get(reverse("mail:accounts")).content.decode()
    assert 'name="route_through_filters"' in form and "Route the imported mail through my filters" in form
    assert 'name="route_through_filters" checked' not in form  # off by default

    page = upload(logged_in_client, archive(tmp_path, "a.mbox", "a"), "a.mbox", django_capture_on_commit_callbacks)
    assert "3 new" in page and "The new mail goes through your filters" not in page
    assert not Run.objects.exists()  # routed (the outbox is done) but older than the filter
    assert not MessageOutbox.objects.filter(routed_at=None).exists()

    page = upload(
        logged_in_client,
        archive(tmp_path, "b.mbox", "b"),
        "b.mbox",
        django_capture_on_commit_callbacks,
        route_through_filters="on",
    )
    assert "3 new" in page and "The new mail goes through your filters" in page
    routed = sorted(Run.objects.values_list("message__subject", flat=True))
    assert routed == ["Invoice b-1", "Invoice b-2"]
    assert set(Run.objects.values_list("director_id", flat=True)) == {invoices.pk}
    assert not MessageOutbox.objects.filter(routed_at=None).exists()


def test_a_crash_before_the_routing_hook_loses_nothing(user: Any, invoices: Director, tmp_path: Path) -> None:
    account: MailAccount = actions.create_local_account(owner=user, name="Old mail")
    path = tmp_path / "c.mbox"
    path.write_bytes(archive(tmp_path, "c.mbox", "c"))
    # No on-commit callbacks run here: as if the process died right after the batch committed.
    summary = import_path(account, path, route_through_filters=True)
    assert summary.imported == 3
    ids = list(Message.objects.filter(account=account).values_list("pk", flat=True))
    assert outbox.pending_ids(kind="route", message_ids=ids) == sorted(ids)
    assert flagged(ids) == set(ids)
    assert not Run.objects.exists()

    # The outbox sweeper (a schedule) finds them past the grace period and routes them the same way.
    result = outbox.sweep_outbox(now=dt.datetime.now(dt.UTC) + outbox.GRACE * 2)
    assert result.announced["route"] == 3
    assert sorted(Run.objects.values_list("message__subject", flat=True)) == ["Invoice c-1", "Invoice c-2"]
    assert outbox.pending_ids(kind="route", message_ids=ids) == []


def test_import_mail_command_has_the_same_option(user: Any, invoices: Director, tmp_path: Path) -> None:
    from io import StringIO

    from django.core.management import call_command

    path = tmp_path / "d.mbox"
    path.write_bytes(archive(tmp_path, "d.mbox", "d"))
    user.is_superuser = True
    user.save(update_fields=["is_superuser"])
    call_command("import_mail", str(path), "--account", "Cmd", "--route", "--no-progress", stdout=StringIO())
    ids = list(Message.objects.filter(account__name="Cmd").values_list("pk", flat=True))
    assert len(ids) == 3 and flagged(ids) == set(ids)
