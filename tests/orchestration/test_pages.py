"""Runs list, run detail (results + transcript), diagnostics tree and API, memory table."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from django.urls import reverse

from apps.orchestration.models import Memory, Run, RunStatus
from apps.workspaces.actions import push_inbox_entry
from apps.workspaces.models import Workspace, WorkspaceItem
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.orchestration.conftest import is_agent, is_director

pytestmark = pytest.mark.django_db
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()


@pytest.fixture
def finished_run(client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI) -> Run:
    client_manager.api_config.input_cost_per_mtok = 2
    client_manager.api_config.output_cost_per_mtok = 8
    client_manager.api_config.save()
    fake_llm.when(
        is_agent("Psychologist"),
        Reply.calls(("memory_add", {"scope": "shared", "content": "Client One is upset", "tags": ["mood"]})),
        Reply.text("The client is **upset**."),
    )
    fake_llm.when(
        is_director,
        Reply.calls(("agent__psychologist", {"input": "Mood?"})),
        Reply.calls(
            ("workspace_add_item", {"label": "Summary", "mimeType": "text/markdown", "data": "**Mood:** upset"}),
            ("workspace_add_item", {"label": "Scores", "mimeType": "application/json", "data": '{"anger": 0.8}'}),
            ("workspace_add_item", {"label": "Chart", "mimeType": "image/png", "encoding": "base64", "data": PNG}),
            (
                "workspace_add_item",
                {
                    "label": "Archive",
                    "mimeType": "application/zip",
                    "encoding": "base64",
                    "data": base64.b64encode(b"PK\x03\x04").decode(),
                },
            ),
        ),
        Reply.text("All done."),
    )
    run = Run.objects.get(message=store_mail(subject="Complaint <script>", sender="client1@domain.com"))
    assert run.status == RunStatus.COMPLETED, run.error
    return run


def test_runs_list_and_detail_render_results_and_transcript(logged_in_client: Any, finished_run: Run) -> None:
    listing = logged_in_client.get(reverse("runs:list")).content.decode()
    assert f'id="run-{finished_run.pk}"' in listing and "Client Manager" in listing
    assert "Complaint &lt;script&gt;" in listing and "<script>" not in listing.split("<main")[1]
    assert "$0.0" in listing  # a cost estimate from the configured prices

    page = logged_in_client.get(reverse("runs:detail", args=[finished_run.pk])).content.decode()
    assert "<p><strong>Mood:</strong> upset</p>" in page  # markdown rendered (and sanitized)
    assert "&quot;anger&quot;: 0.8" in page  # JSON pretty-printed
    assert f'src="data:image/png;base64,{PNG}"' in page
    assert "No preview for application/zip; use Download." in page
    # tool-call chips
    assert "</svg> agent__psychologist</summary>" in page and "</svg> workspace_add_item</summary>" in page
    assert page.count('<svg class="icon icon-tool"') >= 2
    assert "Agent Psychologist" in page and "finalized" in page
    assert 'hx-trigger="every 2s"' not in page  # finished: no polling

    zip_item = WorkspaceItem.objects.get(label="Archive")
    download = logged_in_client.get(reverse("runs:item_download", args=[zip_item.pk]))
    assert download.content == b"PK\x03\x04" and download["Content-Type"] == "application/zip"
    assert download["Content-Disposition"].startswith("attachment;")


def test_inbox_comments_on_the_run_page_are_rendered_markdown(logged_in_client: Any, finished_run: Run) -> None:
    workspace = Workspace.objects.get(run_id=finished_run.pk)
    comments = "**Refund** approved:\n\n- order <b>ER-1</b>"
    push_inbox_entry(workspace=workspace, comments=comments, run_id=finished_run.pk)
    page = logged_in_client.get(reverse("runs:detail", args=[finished_run.pk])).content.decode()
    shown = page.split('data-testid="run-inbox-comments"')[1].split("</div>")[0]
    assert "<strong>Refund</strong> approved:" in shown and "<li>order &lt;b&gt;ER-1&lt;/b&gt;</li>" in shown


def test_pages_and_items_of_other_users_are_404(client: Any, django_user_model: Any, finished_run: Run) -> None:
    other = django_user_model.objects.create_user(username="eve", email="eve@example.com", password="x", is_staff=True)
    client.force_login(other)
    assert client.get(reverse("runs:detail", args=[finished_run.pk])).status_code == 404
    item = WorkspaceItem.objects.first()
    assert item is not None
    assert client.get(reverse("runs:item_download", args=[item.pk])).status_code == 404
    assert client.get("/api/diagnostics/unified").json() == {"nodes": []}
    thread = finished_run.threads.first()
    assert thread is not None
    assert client.get(f"/api/diagnostics/unified/dir:{thread.pk}").status_code == 404


def test_diagnostics_are_staff_only(logged_in_client: Any, finished_run: Run) -> None:
    """The seed: admin only. A non-staff user (here the runs' own owner) gets 403 from the API, the admin's
    "not authorized" sign-in page instead of the pages, and no Diagnostics button on Runs."""
    refused = logged_in_client.get("/api/diagnostics/unified")
    assert refused.status_code == 403
    assert refused.json()["error"].startswith("Diagnostics are for administrators")
    thread = finished_run.threads.first()
    assert thread is not None
    assert logged_in_client.get(f"/api/diagnostics/unified/dir:{thread.pk}").status_code == 403
    for name in ("runs:diagnostics", "runs:diagnostics_node"):
        page = logged_in_client.get(reverse(name))
        assert page.status_code == 302 and page["Location"].startswith("/admin/login/")
    runs_page = logged_in_client.get(reverse("runs:list")).content.decode()
    assert reverse("runs:diagnostics") not in runs_page


def test_unified_diagnostics_tree_interleaves_agent_threads(
    logged_in_client: Any, user: Any, finished_run: Run
) -> None:
    assert finished_run.director.owner_id == user.pk
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    assert reverse("runs:diagnostics") in logged_in_client.get(reverse("runs:list")).content.decode()
    tree = logged_in_client.get("/api/diagnostics/unified").json()["nodes"]
    (cycle,) = tree
    assert cycle["id"] == "cycle:none" and cycle["type"] == "fetchCycle"
    (director,) = cycle["children"]
    assert director["type"] == "directorThread" and director["finalized"] is True
    kinds = [child.get("type") or child["phase"] for child in director["children"]]
    # director start, then the agent's subtree where it was delegated, then the agent__ tool entry and the rest
    assert kinds[0] == "director" and kinds[1] == "agentThread" and kinds[2] == "tool" and kinds[-1] == "result"
    agent = director["children"][1]
    assert [e["action"] or e["tool"] for e in agent["entries"]] == ["agent_input", "memory_add", "agent_output"]
    assert director["children"][2]["tool"] == "agent__psychologist"
    timestamps = [c.get("timestamp") or c["entries"][0]["timestamp"] for c in director["children"]]
    assert timestamps == sorted(timestamps)

    entry = logged_in_client.get(f"/api/diagnostics/unified/{agent['entries'][1]['id']}").json()
    assert entry["detail"]["tool"] == "memory_add" and entry["detail"]["request"]["content"] == "Client One is upset"
    assert entry["email"]["subject"] == "Complaint <script>"
    thread = logged_in_client.get(f"/api/diagnostics/unified/{director['id']}").json()
    assert thread["messages"][0]["role"] == "system" and {e["kind"] for e in thread["providerEvents"]} == {
        "request",
        "response",
    }
    assert logged_in_client.get("/api/diagnostics/unified/bogus").status_code == 404

    page = logged_in_client.get(reverse("runs:diagnostics")).content.decode()
    assert 'data-testid="diagnostics-tree"' in page and "Agent Psychologist" in page
    node = logged_in_client.get(reverse("runs:diagnostics_node"), {"id": agent["entries"][1]["id"]}).content.decode()
    assert 'id="tab-result"' in node and 'id="tab-email"' in node and "Client One is upset" in node


def test_memory_table_search_edit_delete(logged_in_client: Any, finished_run: Run) -> None:
    memory = Memory.objects.get()
    page = logged_in_client.get(reverse("runs:memories")).content.decode()
    assert "Client One is upset" in page
    none = logged_in_client.get(reverse("runs:memories"), {"q": "nothing like this"}, HTTP_HX_REQUEST="true")
    assert 'data-testid="no-memories"' in none.content.decode()
    assert "Client One" in logged_in_client.get(reverse("runs:memories"), {"scope": "shared"}).content.decode()
    logged_in_client.post(
        reverse("runs:memory_edit", args=[memory.pk]),
        {"content": "Client One calmed down", "tags": "mood, calm", "scope": "global"},
    )
    memory.refresh_from_db()
    assert (memory.content, memory.tags, memory.scope, memory.director_id) == (
        "Client One calmed down",
        ["mood", "calm"],
        "global",
        None,
    )
    # Back to local: a global memory belongs to no director, and a local one no director owns would never be
    # read again; the page says why and keeps it global (before, it was saved local and lost to every director).
    refused = logged_in_client.post(
        reverse("runs:memory_edit", args=[memory.pk]),
        {"content": "Client One calmed down", "tags": "mood", "scope": "local"},
        follow=True,
    ).content.decode()
    assert "Not saved: A local memory needs its director" in refused
    memory.refresh_from_db()
    assert (memory.scope, memory.director_id, memory.tags) == ("global", None, ["mood", "calm"])
    logged_in_client.post(reverse("runs:memory_delete", args=[memory.pk]))
    assert not Memory.objects.exists()


def test_failed_runs_can_be_run_again(
    logged_in_client: Any,
    client_manager: Any,
    store_mail: Any,
    fake_llm: FakeOpenAI,
    django_capture_on_commit_callbacks: Any,
) -> None:
    client_manager.api_config.max_retries = 0
    client_manager.api_config.save()
    fake_llm.script(Reply.failure(500))
    run = Run.objects.get(message=store_mail(subject="flaky", sender="client2@domain.com"))
    assert run.status == RunStatus.FAILED
    page = logged_in_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert "model call failed (server)" in page and "Run again" in page
    fake_llm.script(Reply.text("fine now"))
    with django_capture_on_commit_callbacks(execute=True):
        logged_in_client.post(reverse("runs:retry", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and run.threads.count() == 2
    response = logged_in_client.post(reverse("runs:retry", args=[run.pk]), follow=True)
    assert "only failed or skipped runs can be retried" in response.content.decode()


def test_the_live_part_of_the_run_page_carries_the_buttons_a_reload_shows(
    logged_in_client: Any, finished_run: Run
) -> None:
    # A run page opened while the run was queued polls runs:live; the workspace (and "Run again" once it
    # failed) appears during the run, and the live part must show their buttons without a reload.
    workspace = Workspace.objects.get(run_id=finished_run.pk)
    live = logged_in_client.get(reverse("runs:live", args=[finished_run.pk])).content.decode()
    assert f'href="{reverse("inbox:workspace", args=[workspace.pk])}"' in live and "Workspace &amp; MCP token" in live
    assert "Run again" not in live
    Run.objects.filter(pk=finished_run.pk).update(status=RunStatus.FAILED, error="The model went away.")
    live = logged_in_client.get(reverse("runs:live", args=[finished_run.pk])).content.decode()
    assert f'action="{reverse("runs:retry", args=[finished_run.pk])}"' in live and "Run again" in live
    page = logged_in_client.get(reverse("runs:detail", args=[finished_run.pk])).content.decode()
    assert page.count("Workspace &amp; MCP token") == 1 and page.count("Run again") == 1
