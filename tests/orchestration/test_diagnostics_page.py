"""The Diagnostics page (issue 38, item 3): the detail pane as structured JSON (null/true/false, nested values
folded, hostile strings escaped), times, durations and tokens, the tool call's arguments and result as
sections; Grouped/Flat; per-entry and bulk delete of the user's own entries (staff only), through the real
URLconf and a real director run against the fake OpenAI server."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

from apps.orchestration.actions import delete_diagnostics_entries
from apps.orchestration.models import Conversation, OrchLog, Run, RunStatus, ThreadKind
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.orchestration.conftest import is_agent, is_director

pytestmark = pytest.mark.django_db
HOSTILE = '<script>alert("x")</script>'


@pytest.fixture
def run(client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI) -> Run:
    """A real run: the director asks the Psychologist (who remembers a fact), then answers."""
    fake_llm.when(
        is_agent("Psychologist"),
        Reply.calls(("memory_add", {"scope": "shared", "content": "Client One is upset", "tags": ["mood"]})),
        Reply.text("The client is upset."),
    )
    fake_llm.when(is_director, Reply.calls(("agent__psychologist", {"input": "Mood?"})), Reply.text("All done."))
    finished = Run.objects.get(message=store_mail(subject="Complaint", sender="client1@domain.com"))
    assert finished.status == RunStatus.COMPLETED, finished.error
    return finished


@pytest.fixture
def staff(user: Any) -> Any:
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    return user


def _director_thread(run: Run) -> Conversation:
    return Conversation.objects.get(run=run, kind=ThreadKind.DIRECTOR)


def _hostile_entry(run: Run) -> OrchLog:
    """A tool entry as the engine writes them, with every JSON kind and strings that try to break out."""
    return OrchLog.objects.create(
        run=run,
        director=run.director,
        director_name=run.director.name,
        dir_thread=_director_thread(run),
        phase="tool",
        detail={
            "tool": "search_mail",
            "request": {
                "query": HOSTILE,
                "limit": None,
                "exact": True,
                "filters": {"folders": ["INBOX", "Archive"], "since": {"days": 7, "strict": False}},
                '<img src=x onerror="alert(1)">': 1.5,
            },
            "by": "director",
            "durationMs": 1250,
        },
        result={"hits": [{"subject": "Re: </pre><b>bold</b>", "score": 0.75}], "next": None},
    )


def _json_view(html: str) -> str:
    return "".join(re.findall(r'<div class="json-view">(.*?)</div>', html, flags=re.S))


def test_detail_shows_real_json_with_escaped_strings_and_the_call_as_sections(
    client: Any, staff: Any, run: Run
) -> None:
    client.force_login(staff)
    entry = _hostile_entry(run)
    html = client.get(reverse("runs:diagnostics_node"), {"id": f"log:{entry.pk}"}).content.decode()
    shown = _json_view(html)
    # Real JSON literals, not Python's repr.
    assert '<span class="json-null">null</span>' in shown and '<span class="json-bool">true</span>' in shown
    assert '<span class="json-bool">false</span>' in shown and '<span class="json-number">1.5</span>' in shown
    assert "None" not in shown and "True" not in shown and "False" not in shown
    # Keys and strings are escaped, never markup.
    assert HOSTILE not in html and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in shown
    assert "<img src=x" not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in shown
    assert "</pre><b>bold</b>" not in html and "&lt;/pre&gt;&lt;b&gt;bold&lt;/b&gt;" in shown
    # Nested objects fold with <details>; the deeper levels start closed.
    assert shown.count('<details class="json-branch"') >= 4
    assert '<details class="json-branch"><summary><span class="json-key">"since"</span>' in shown
    # The call and its result as sections, with the time, the duration and the run's tokens.
    titles = re.findall(r"<h4>(.*?)</h4>", html, flags=re.S)
    assert titles[0].startswith("Arguments") and "<code>search_mail</code>" in titles[0]
    assert titles[1] == "Result" and titles[2] == "Call details"
    assert 'data-testid="diagnostics-duration">1.25 s<' in html
    run.refresh_from_db()
    assert f"{run.prompt_tokens} in · {run.completion_tokens} out" in html
    assert re.search(r'<time datetime="[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}</time>', html)
    assert f'href="{reverse("runs:detail", args=[run.pk])}"' in html
    # The same pane when the page is opened with ?id= (a link to the entry).
    page = client.get(reverse("runs:diagnostics"), {"id": f"log:{entry.pk}"}).content.decode()
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page and HOSTILE not in page
    assert f'data-node="log:{entry.pk}" aria-current="true"' in page


def test_engine_entries_carry_tool_durations_and_threads_show_tokens_calls_and_messages(
    client: Any, staff: Any, run: Run
) -> None:
    client.force_login(staff)
    tools = [
        log for log in OrchLog.objects.filter(run=run, phase="tool") if (log.detail or {}).get("tool") == "memory_add"
    ]
    (memory_add,) = tools
    assert isinstance((memory_add.detail or {})["durationMs"], int)  # the engine times every tool call
    html = client.get(reverse("runs:diagnostics_node"), {"id": f"log:{memory_add.pk}"}).content.decode()
    assert 'data-testid="diagnostics-duration">' in html and "After previous" in html
    assert '"Client One is upset"' in _json_view(html)

    thread = _director_thread(run)
    html = client.get(reverse("runs:diagnostics_node"), {"id": f"dir:{thread.pk}"}).content.decode()
    thread.refresh_from_db()
    assert f'data-testid="diagnostics-tokens">{thread.prompt_tokens} in · {thread.completion_tokens} out' in html
    assert thread.prompt_tokens > 0
    assert "Model calls" in html and "fake-model" in html
    # The director's call of the agent: its arguments as a tree, and the tool message answering it.
    assert "<code>agent__psychologist</code>" in html and '"Mood?"' in html
    assert "result of <code>agent__psychologist</code>" in html
    assert 'data-testid="delete-thread-entries"' in html


def test_grouped_and_flat_are_linkable_views_of_the_same_entries(client: Any, staff: Any, run: Run) -> None:
    client.force_login(staff)
    entries = list(OrchLog.objects.filter(run=run).order_by("timestamp", "pk"))
    grouped = client.get(reverse("runs:diagnostics")).content.decode()
    assert re.search(r'aria-current="page" data-testid="view-grouped"', grouped)
    assert '<details class="diag-group diag-cycle" open>' in grouped and "Agent Psychologist" in grouped
    assert f"{len(entries)} entries by fetch cycle and thread" in grouped

    flat = client.get(reverse("runs:diagnostics"), {"view": "flat"}).content.decode()
    assert re.search(r'aria-current="page" data-testid="view-flat"', flat)
    assert "diag-group" not in flat and f"{len(entries)} entries, newest first" in flat
    order = [int(pk) for pk in re.findall(r'class="diag-link" href="[^"]*" data-node="log:(\d+)"', flat)]
    assert order == [e.pk for e in reversed(entries)]
    assert "Client Manager — Complaint" in flat  # each row says which thread it belongs to
    # Links keep the layout; an unknown layout falls back to Grouped.
    assert f"?view=flat&amp;id=log:{entries[0].pk}" in flat
    fallback = client.get(reverse("runs:diagnostics"), {"view": "x"}).content.decode()
    assert re.search(r'aria-current="page" data-testid="view-grouped"', fallback)


def test_delete_one_entry_and_the_run_page_still_works(client: Any, staff: Any, run: Run) -> None:
    client.force_login(staff)
    first, second, *_ = OrchLog.objects.filter(run=run).order_by("timestamp", "pk")
    answer = client.post(
        reverse("runs:diagnostics_delete"), {"entry": f"log:{first.pk}", "view": "flat", "then": f"log:{second.pk}"}
    )
    assert answer.status_code == 302 and answer["Location"] == f"/runs/diagnostics/?view=flat&id=log%3A{second.pk}"
    assert not OrchLog.objects.filter(pk=first.pk).exists() and OrchLog.objects.filter(pk=second.pk).exists()
    page = client.get(answer["Location"]).content.decode()
    assert "Deleted 1 diagnostics entry." in page and f'data-node="log:{second.pk}" aria-current="true"' in page
    # The run, its transcript and its results do not depend on the entries.
    assert client.get(reverse("runs:detail", args=[run.pk])).status_code == 200
    OrchLog.objects.filter(run=run).delete()
    assert client.get(reverse("runs:detail", args=[run.pk])).status_code == 200
    assert "Agent Psychologist" in client.get(reverse("runs:diagnostics")).content.decode()
    # The deleted entry's old link says what happened.
    gone = client.get(reverse("runs:diagnostics_node"), {"id": f"log:{first.pk}"})
    assert gone.status_code == 200 and "This entry no longer exists" in gone.content.decode()
    # An unsafe `then` is not followed.
    answer = client.post(reverse("runs:diagnostics_delete"), {"entry": "log:1", "then": "//evil.example/"})
    assert answer["Location"] == "/runs/diagnostics/?view=grouped"


def test_bulk_delete_selected_and_all_shown(client: Any, staff: Any, run: Run) -> None:
    client.force_login(staff)
    ids = list(OrchLog.objects.filter(run=run).order_by("pk").values_list("pk", flat=True))
    assert len(ids) >= 5
    client.post(
        reverse("runs:diagnostics_delete"),
        {"scope": "selected", "entry": [f"log:{ids[0]}", f"log:{ids[1]}"], "shown": [f"log:{pk}" for pk in ids]},
    )
    assert list(OrchLog.objects.filter(run=run).order_by("pk").values_list("pk", flat=True)) == ids[2:]
    answer = client.post(
        reverse("runs:diagnostics_delete"), {"scope": "shown", "shown": [f"log:{pk}" for pk in ids[2:]]}, follow=True
    )
    assert not OrchLog.objects.filter(run=run).exists()
    assert f"Deleted {len(ids) - 2} diagnostics entries." in answer.content.decode()
    nothing = client.post(reverse("runs:diagnostics_delete"), {"scope": "selected"}, follow=True).content.decode()
    assert "Nothing was deleted: no entries were selected." in nothing
    html = client.get(reverse("runs:diagnostics"), {"view": "flat"}).content.decode()
    assert "The runs shown have no entries" in html and 'data-testid="delete-shown"' not in html


def test_other_users_entries_are_not_deletable(client: Any, django_user_model: Any, run: Run) -> None:
    other = django_user_model.objects.create_user(username="eve", email="eve@example.com", password="x", is_staff=True)
    client.force_login(other)
    ids = list(OrchLog.objects.filter(run=run).values_list("pk", flat=True))
    answer = client.post(reverse("runs:diagnostics_delete"), {"entry": [f"log:{pk}" for pk in ids]}, follow=True)
    assert "Nothing was deleted: those entries were already gone" in answer.content.decode()
    assert OrchLog.objects.filter(pk__in=ids).count() == len(ids)
    assert delete_diagnostics_entries(user=other, entry_ids=ids) == 0
    html = client.get(reverse("runs:diagnostics_node"), {"id": f"log:{ids[0]}"}).content.decode()
    assert "This entry no longer exists" in html and "Client One" not in html
    assert 'data-testid="diagnostics-empty"' in client.get(reverse("runs:diagnostics")).content.decode()


def test_non_staff_cannot_see_or_delete(logged_in_client: Any, run: Run) -> None:
    ids = list(OrchLog.objects.filter(run=run).values_list("pk", flat=True))
    for answer in (
        logged_in_client.get(reverse("runs:diagnostics"), {"view": "flat"}),
        logged_in_client.post(reverse("runs:diagnostics_delete"), {"entry": [f"log:{pk}" for pk in ids]}),
    ):
        assert answer.status_code == 302 and answer["Location"].startswith("/admin/login/")
    assert OrchLog.objects.filter(pk__in=ids).count() == len(ids)


def test_empty_page_says_what_to_do(client: Any, staff_user: Any) -> None:
    client.force_login(staff_user)
    html = client.get(reverse("runs:diagnostics")).content.decode()
    assert 'data-testid="diagnostics-empty"' in html and "No director runs yet." in html
    assert reverse("settings:filters") in html and 'data-testid="delete-shown"' not in html


def test_api_deletes_own_entries_only(client: Any, staff: Any, django_user_model: Any, run: Run) -> None:
    first, second, third, *_ = OrchLog.objects.filter(run=run).order_by("pk")
    other = django_user_model.objects.create_user(username="eve", email="eve@example.com", password="x", is_staff=True)
    client.force_login(other)
    assert client.delete(f"/api/diagnostics/unified/log:{first.pk}").status_code == 404
    bulk = client.post("/api/diagnostics/unified/delete", {"ids": [f"log:{first.pk}"]}, content_type="application/json")
    assert bulk.json() == {"deleted": 0} and OrchLog.objects.filter(pk=first.pk).exists()

    client.force_login(staff)
    assert client.delete(f"/api/diagnostics/unified/log:{first.pk}").json() == {"deleted": 1}
    assert client.delete(f"/api/diagnostics/unified/log:{first.pk}").status_code == 404
    thread = _director_thread(run)
    assert client.delete(f"/api/diagnostics/unified/dir:{thread.pk}").status_code == 404  # threads stay
    ids = [f"log:{second.pk}", f"log:{third.pk}"]
    bulk = client.post("/api/diagnostics/unified/delete", {"ids": ids}, content_type="application/json")
    assert bulk.json() == {"deleted": 2}
    refused = client.post("/api/diagnostics/unified/delete", {"ids": ["dir:1"]}, content_type="application/json")
    assert refused.status_code == 422


def test_api_delete_is_staff_only(logged_in_client: Any, run: Run) -> None:
    entry = OrchLog.objects.filter(run=run).first()
    assert entry is not None
    assert logged_in_client.delete(f"/api/diagnostics/unified/log:{entry.pk}").status_code == 403
    answer = logged_in_client.post(
        "/api/diagnostics/unified/delete", {"ids": [f"log:{entry.pk}"]}, content_type="application/json"
    )
    assert answer.status_code == 403 and OrchLog.objects.filter(pk=entry.pk).exists()
