"""The Results tree and its panes: constant query counts, filters, MIME-aware previews, tenancy."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from apps.orchestration.models import Conversation, RunStatus, ThreadKind
from apps.results import selectors
from apps.results.selectors import ResultFilters
from apps.workspaces.actions import add_item, remove_item, update_item
from tests.results.conftest import MakeResult

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}


def _build(make_result: MakeResult, emails: int) -> None:
    for number in range(emails):
        first = make_result(subject=f"Invoice {number}", director="Clients", items=[{}, {"tags": ["urgent"]}])
        make_result(message=first.message, director="Bookkeeping", items=[{"mime_type": "application/json"}])


def test_tree_reads_in_constant_queries_whatever_its_size(
    user: Any, make_result: MakeResult, django_assert_num_queries: Any
) -> None:
    _build(make_result, 1)
    with django_assert_num_queries(4):  # the page's emails, their runs, workspaces, items
        small = selectors.results_tree(user=user, filters=ResultFilters())
    _build(make_result, 5)
    with django_assert_num_queries(4):
        tree = selectors.results_tree(user=user, filters=ResultFilters())
    with django_assert_num_queries(4):
        selectors.results_tree(user=user, filters=ResultFilters(author="director", q="invoice"))
    with django_assert_num_queries(4):  # a tag filter pages like the others (the tag is matched in SQL)
        selectors.results_tree(user=user, filters=ResultFilters(tag="urgent"))
    paged = selectors.results_tree(user=user, filters=ResultFilters(), emails=4)
    assert len(paged.emails) == 4 and paged.truncated and not tree.truncated
    assert len(small.emails) == 1
    assert [email.message.subject for email in tree.emails][:2] == ["Invoice 4", "Invoice 3"]  # newest first
    newest = tree.emails[0]
    assert [node.run.director.name for node in newest.runs] == ["Bookkeeping", "Clients"]
    assert [item.label for item in newest.runs[1].items] == ["item 1", "item 0"]
    assert newest.item_count == 3


def test_panes_read_in_constant_queries(user: Any, make_result: MakeResult, django_assert_num_queries: Any) -> None:
    one = make_result(items=[{}])
    many = make_result(subject="Busy", items=[{}, {}, {}])
    make_result(message=many.message, director="Other", items=[{}, {}])
    counts = []
    for message_id in (one.message.pk, many.message.pk):
        with django_assert_num_queries(5) as captured:
            pane = selectors.email_pane(user=user, message_id=message_id)
        counts.append(len(captured))
    assert len(pane.runs) == 2 and sum(len(node.items) for node in pane.runs) == 5
    for item in (one.items[0], many.items[2]):  # item, run, revision log (+ the supersedes chain when it has a path)
        with django_assert_num_queries(3):
            selectors.item_pane(user=user, item_id=item.pk)
    with django_assert_num_queries(3):  # run, threads, items
        selectors.run_pane(user=user, run_id=many.run.pk)


def test_filters_narrow_the_tree(user: Any, make_result: MakeResult) -> None:
    done = make_result(subject="Quarterly report", items=[{"tags": ["finance"]}, {"label": "draft reply"}])
    make_result(subject="Lunch", director="Social", status=RunStatus.FAILED)
    agent_made = make_result(subject="Contract", items=[{"label": "summary"}])
    add_item(workspace=agent_made.items[0].workspace, data="x", label="agent note", created_by="agent")

    def subjects(**query: Any) -> list[str]:
        tree = selectors.results_tree(user=user, filters=ResultFilters.from_query(query))
        return sorted(email.message.subject for email in tree.emails)

    assert subjects() == ["Contract", "Lunch", "Quarterly report"]
    assert subjects(status="failed") == ["Lunch"]
    assert subjects(director=str(done.run.director_id)) == ["Contract", "Quarterly report"]
    assert subjects(account=str(done.message.account_id)) == ["Quarterly report"]
    assert subjects(tag="finance") == ["Quarterly report"]
    assert subjects(author="agent") == ["Contract"]
    assert subjects(q="draft reply") == ["Quarterly report"]  # an item label
    assert subjects(q="social") == ["Lunch"]  # a director name
    assert subjects(status="bogus") == ["Contract", "Lunch", "Quarterly report"]  # ignored, not an error
    tagged = selectors.results_tree(user=user, filters=ResultFilters(tag="finance"))
    assert [item.tags for item in tagged.emails[0].runs[0].items] == [["finance"]]


def test_page_shows_tree_and_chosen_node(logged_in_client: Client, make_result: MakeResult) -> None:
    result = make_result(items=[{"label": "Reply draft", "mime_type": "text/markdown", "data": "# Dear client"}])
    page = logged_in_client.get("/results/", {"node": f"item-{result.items[0].pk}"})
    html = page.content.decode()
    assert page.status_code == 200
    assert 'data-testid="results-tree"' in html and "Invoice 42" in html and "Reply draft" in html
    assert "<h1>Dear client</h1>" in html  # the item pane rendered the markdown
    assert f'id="results-active" value="item-{result.items[0].pk}"' in html
    empty = logged_in_client.get("/results/", {"q": "nothing like this"})
    assert "Nothing matches these filters" in empty.content.decode()
    tree = logged_in_client.get("/results/tree/", {"status": "completed"}, headers=HX)
    assert "Invoice 42" in tree.content.decode()
    # A pane URL opened on its own lands on the page with that node chosen.
    direct = logged_in_client.get(f"/results/runs/{result.run.pk}/")
    assert direct.status_code == 302 and direct["Location"] == f"/results/?node=run-{result.run.pk}"


def test_new_user_sees_what_to_do(logged_in_client: Client) -> None:
    html = logged_in_client.get("/results/").content.decode()
    assert "No results yet" in html and 'href="/settings/filters/"' in html


def test_item_previews_are_mime_aware_and_sanitized(logged_in_client: Client, make_result: MakeResult) -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()
    result = make_result(
        items=[
            {"mime_type": "text/html", "data": '<p onclick="steal()">Hi <script>alert(1)</script><b>there</b></p>'},
            {"mime_type": "application/json", "data": json.dumps({"a": [1, 2]})},
            {"mime_type": "image/png", "encoding": "base64", "data": png, "label": "chart"},
            {"mime_type": "text/x-python", "data": "print('<ok>')"},
            {"mime_type": "application/pdf", "encoding": "base64", "data": base64.b64encode(b"%PDF").decode()},
        ]
    )
    html_item, json_item, image, code, pdf = result.items

    def pane(item: Any) -> str:
        response = logged_in_client.get(f"/results/items/{item.pk}/", headers=HX)
        assert response.status_code == 200
        return response.content.decode()

    rendered = pane(html_item)
    preview = rendered.split('data-testid="item-preview"', 1)[1].split("</div>", 2)[0]
    assert "<b>there</b>" in preview and "<script" not in preview and "onclick" not in preview
    assert "&lt;script&gt;" in rendered  # the raw view and the copy source keep the text, escaped
    assert 'data-kind="json"' in pane(json_item) and "&quot;a&quot;: [\n    1," in pane(json_item)
    assert f'src="data:image/png;base64,{png}"' in pane(image)
    assert 'data-kind="code"' in pane(code) and "print(&#x27;&lt;ok&gt;&#x27;)" in pane(code)
    pdf_pane = pane(pdf)
    assert 'data-kind="file"' in pdf_pane and f"/runs/items/{pdf.pk}/download/" in pdf_pane
    assert 'data-testid="copy-item"' not in pdf_pane and 'data-testid="copy-item"' in pane(code)


def test_item_pane_shows_revisions_and_the_items_it_supersedes(
    logged_in_client: Client, make_result: MakeResult
) -> None:
    result = make_result(items=[{"label": "v1", "path": "reply.md"}])
    first = result.items[0]
    workspace = first.workspace
    actor = {"agent": {"id": "1", "name": "Response"}, "createdBy": "agent"}
    remove_item(item_id=first.pk, workspace=workspace, hard=False, actor=actor)
    second = add_item(workspace=workspace, data="v2 text", label="v2", path="reply.md")
    update_item(item_id=second.pk, workspace=workspace, patch={"data": "v2b"}, expected_revision=1, actor=actor)
    html = logged_in_client.get(f"/results/items/{second.pk}/", headers=HX).content.decode()
    assert "r1 added" in html and "r2 updated by agent Response" in html
    assert 'data-testid="supersedes"' in html and "v1 · r2" in html and "deleted" in html


def test_run_pane_shows_the_conversation_without_empty_bubbles(
    logged_in_client: Client, make_result: MakeResult
) -> None:
    result = make_result(items=[{}])
    Conversation.objects.create(
        run=result.run,
        kind=ThreadKind.DIRECTOR,
        director=result.run.director,
        messages=[
            {"role": "system", "content": "You are the director."},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "workspace_add_item", "arguments": '{"x":1}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": '{"ok":true}'},
            {"role": "assistant", "content": None},
            {"role": "assistant", "content": "All **done**."},
        ],
    )
    html = logged_in_client.get(f"/results/runs/{result.run.pk}/", headers=HX).content.decode()
    assert html.count('class="bubble ') == 4  # system, the tool call, its result, the answer: no empty one
    assert '<svg class="icon icon-tool"' in html and "</svg> workspace_add_item</summary>" in html
    assert "&quot;x&quot;: 1" in html and "icon-corner-down-right" in html
    assert "</svg> workspace_add_item result" in html and "&quot;ok&quot;: true" in html
    assert "<strong>done</strong>" in html


def test_another_users_results_are_404(client: Client, user: Any, make_result: MakeResult) -> None:
    other = get_user_model().objects.create_user(username="other", email="other@example.com", password="x" * 12)
    theirs = make_result(subject="Their secret", owner=other, items=[{"data": "their data"}])
    mine = make_result(items=[{}])
    client.force_login(user)
    for url in (
        f"/results/emails/{theirs.message.pk}/",
        f"/results/runs/{theirs.run.pk}/",
        f"/results/items/{theirs.items[0].pk}/",
    ):
        assert client.get(url, headers=HX).status_code == 404, url
    page = client.get("/results/", {"node": f"run-{theirs.run.pk}"}).content.decode()
    assert "That result is gone" in page and "Their secret" not in page
    assert client.get(f"/results/emails/{mine.message.pk}/", headers=HX).status_code == 200
    # An email with no run of the user's is not a result.
    assert client.get(f"/results/emails/{theirs.message.pk + 1000}/", headers=HX).status_code == 404
