"""The admin for staff who are not superusers: only their own rows, and only their own rows as choices."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from apps.accounts.actions import create_local_account
from apps.accounts.models import Message
from apps.llm.models import ApiConfig
from apps.orchestration.models import Director, FilesystemRoot, Prompt, Run
from apps.routing.models import FetchCycle
from mailagent.admin_scoping import owner_lookup, owner_lookups, scoped_queryset

pytestmark = pytest.mark.django_db


def _user(name: str, **extra: Any) -> Any:
    return get_user_model().objects.create_user(username=name, email=f"{name}@example.com", password="x" * 20, **extra)


def _owned_by(user: Any) -> dict[str, Any]:
    return {
        "api_config": ApiConfig.objects.create(
            owner=user, name=f"llm-{user.username}", base_url="http://127.0.0.1:9/v1"
        ),
        "prompt": Prompt.objects.create(owner=user, name=f"prompt-{user.username}"),
        "account": create_local_account(owner=user, name=f"box-{user.username}", address=f"{user.username}@x.test"),
        "director": Director.objects.create(owner=user, name=f"director-{user.username}"),
        "cycle": FetchCycle.objects.create(owner=user, trigger="fetch"),
    }


@pytest.fixture
def staff(client: Any) -> Any:
    member = _user("staffer", is_staff=True)
    member.user_permissions.set(Permission.objects.all())
    client.force_login(member)
    return member


def test_owner_paths_are_found_through_foreign_keys() -> None:
    assert owner_lookup(Director) == "owner"
    assert owner_lookup(Message) == "account__owner"
    assert owner_lookup(Run) == "director__owner"
    from apps.orchestration.models import OrchestrationSettings, ProviderEvent

    # A run's event or a playground try's: both chains count, each row is its owner's through either.
    assert owner_lookups(ProviderEvent) == ("run__director__owner", "prompt__owner")
    assert owner_lookups(Run) == ("director__owner",)
    assert owner_lookup(OrchestrationSettings) is None


def test_provider_events_are_scoped_through_their_run_or_their_prompt(staff: Any) -> None:
    from apps.orchestration.models import ProviderEvent

    mine, theirs = _owned_by(staff), _owned_by(_user("other"))
    mine_tried = ProviderEvent.objects.create(prompt=mine["prompt"], kind="response")
    ProviderEvent.objects.create(prompt=theirs["prompt"], kind="response")
    assert list(scoped_queryset(ProviderEvent, staff)) == [mine_tried]


def test_choices_lists_and_pages_hold_only_the_staff_members_rows(client: Any, staff: Any) -> None:
    mine, theirs = _owned_by(staff), _owned_by(_user("other"))

    form = client.get("/admin/orchestration/director/add/")
    assert form.status_code == 200
    choices = form.context["adminform"].form.fields
    assert list(choices["api_config"].queryset) == [mine["api_config"]]
    assert list(choices["prompt"].queryset) == [mine["prompt"]]
    assert list(choices["accounts"].queryset) == [mine["account"]]
    assert list(choices["owner"].queryset) == [staff]
    html = form.content.decode()
    assert "llm-other" not in html and "box-other" not in html and "prompt-other" not in html

    # Another owner's id posted anyway is refused by the form, nothing is saved.
    response = client.post(
        "/admin/orchestration/director/add/",
        {
            "owner": staff.pk,
            "name": "sneaky",
            "api_config": theirs["api_config"].pk,
            "step_limit": 10,
            "agents-TOTAL_FORMS": 0,
            "agents-INITIAL_FORMS": 0,
            "filters-TOTAL_FORMS": 0,
            "filters-INITIAL_FORMS": 0,
        },
    )
    assert response.status_code == 200 and "api_config" in response.context["adminform"].form.errors
    assert not Director.objects.filter(name="sneaky").exists()

    changelist = client.get("/admin/orchestration/director/").content.decode()
    assert "director-staffer" in changelist and "director-other" not in changelist
    cycles = client.get("/admin/routing/fetchcycle/").context["cl"].result_list
    assert [c.pk for c in cycles] == [mine["cycle"].pk]
    # Another owner's row: the admin answers as if it did not exist.
    other_page = client.get(f"/admin/orchestration/director/{theirs['director'].pk}/change/", follow=True)
    assert "director-other" not in other_page.content.decode()
    assert "doesn\u2019t exist" in other_page.content.decode()


def test_list_filters_offer_only_related_rows_of_ones_own(client: Any, staff: Any) -> None:
    _owned_by(staff)
    _owned_by(_user("other"))
    page = client.get("/admin/mail/message/").content.decode()
    assert "box-other" not in page


def test_superusers_see_everything(client: Any) -> None:
    root = _user("root", is_staff=True, is_superuser=True)
    _owned_by(root)
    _owned_by(_user("other"))
    client.force_login(root)
    choices = client.get("/admin/orchestration/director/add/").context["adminform"].form.fields
    assert choices["api_config"].queryset.count() == 2 and choices["owner"].queryset.count() == 2


def test_only_superusers_choose_a_filesystem_root(client: Any, staff: Any) -> None:
    row = FilesystemRoot.objects.create(owner=staff, path="")
    assert client.get("/admin/orchestration/filesystemroot/add/").status_code == 403
    client.post(f"/admin/orchestration/filesystemroot/{row.pk}/change/", {"owner": staff.pk, "path": "/"})
    row.refresh_from_db()
    assert row.path == ""


def test_mailbox_tokens_and_their_calls_in_the_admin_are_scoped_and_never_show_a_token(client: Any, staff: Any) -> None:
    from apps.workspaces.actions import issue_mailbox_token, record_mcp_call

    other = _user("other")
    mine, raw_mine = issue_mailbox_token(owner=staff, name="my laptop", scopes="read")
    theirs, _ = issue_mailbox_token(owner=other, name="their laptop", scopes="read")
    record_mcp_call(token_id=mine.pk, owner_id=staff.pk, tool="search_mail", argument_ids={}, ok=True)
    record_mcp_call(token_id=theirs.pk, owner_id=other.pk, tool="get_thread", argument_ids={}, ok=True)
    tokens = client.get("/admin/workspaces/mailboxtoken/")
    assert tokens.status_code == 200
    assert [t.pk for t in tokens.context["cl"].result_list] == [mine.pk]
    page = client.get(f"/admin/workspaces/mailboxtoken/{mine.pk}/change/").content.decode()
    assert "my laptop" in page and raw_mine not in page and "their laptop" not in page
    assert client.get("/admin/workspaces/mailboxtoken/add/").status_code == 403
    calls = client.get("/admin/workspaces/mcpcall/").context["cl"].result_list
    assert [c.tool for c in calls] == ["search_mail"]
