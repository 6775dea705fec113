"""Runs, run detail (workspace results + transcript), diagnostics tree and memories.

Thin views: parse → access selector (404 for other users' rows) → one action → page or partial. Pages of
running work poll their partials with htmx; the partial and the page render the same template.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import content_disposition_header, urlencode
from django.views.decorators.http import require_GET, require_POST

from apps.orchestration import actions, diagnostics_detail, selectors
from apps.orchestration.approvals import ApprovalError
from apps.orchestration.models import MemoryScope, RunStatus
from apps.workspaces import selectors as workspace_selectors
from mailagent.diagnostics import runtime_diagnostics

ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)


def _runs_context(request: HttpRequest) -> dict[str, Any]:
    status = request.GET.get("status") or ""
    director = request.GET.get("director") or ""
    runs = selectors.list_runs_for_user(
        user=request.user, status=status or None, director_id=int(director) if director.isdigit() else None
    )
    page = Paginator(runs, 50).get_page(request.GET.get("page"))
    page_runs = list(page.object_list)
    rows = [{"run": run, "cost": selectors.run_cost(run)} for run in page_runs]
    return {
        "page": page,
        "rows": rows,
        "status": status,
        "director": director,
        "statuses": RunStatus.choices,
        "directors": selectors.directors_for_user(user=request.user),
        "active": any(run.status in ACTIVE for run in page_runs),
    }


@require_GET
def runs(request: HttpRequest) -> HttpResponse:
    return render(request, "orchestration/pages/runs.html", _runs_context(request))


@require_GET
def runs_table(request: HttpRequest) -> HttpResponse:
    return render(request, "orchestration/partials/runs_table.html", _runs_context(request))


def _run_context(request: HttpRequest, run_id: int) -> dict[str, Any]:
    run = selectors.access_run(user=request.user, run_id=run_id)
    workspace = workspace_selectors.workspace_for_run(run_id=run.pk)
    items = list(workspace_selectors.list_items(workspace=workspace)) if workspace else []
    threads = selectors.run_threads(run=run)
    return {
        "run": run,
        "cost": selectors.run_cost(run),
        "workspace": workspace,
        "items": items,
        "threads": [{"thread": t, "entries": selectors.transcript(t)} for t in threads],
        "events": selectors.provider_event_summary(run=run),
        "active": run.status in ACTIVE,
        "queue": selectors.run_queue_position(run=run),
        "inbox_entries": workspace_selectors.entries_for_run(run_id=run.pk),
        "approvals": _approval_rows(selectors.approvals_for_run(run=run)),
    }


@require_GET
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    return render(request, "orchestration/pages/run_detail.html", _run_context(request, run_id))


@require_GET
def run_live(request: HttpRequest, run_id: int) -> HttpResponse:
    return render(request, "orchestration/partials/run_live.html", _run_context(request, run_id))


@require_POST
def run_retry(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.access_run(user=request.user, run_id=run_id)
    try:
        actions.retry_run(run=run)
    except actions.RunNotRetryable as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "The run is queued again.")
    return redirect("runs:detail", run_id=run.pk)


@require_GET
def item_download(request: HttpRequest, item_id: int) -> HttpResponse:
    item = selectors.access_workspace_item(user=request.user, item_id=item_id)
    if item.encoding == "base64":
        try:
            payload = base64.b64decode(item.data)
        except (binascii.Error, ValueError):
            raise Http404("The item's data is damaged") from None
    else:
        payload = item.data.encode("utf-8")
    response = HttpResponse(payload, content_type=item.mime_type or "application/octet-stream")
    name = (item.label or f"item-{item.pk}").replace("/", "-")
    response["Content-Disposition"] = content_disposition_header(True, name)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "sandbox"
    return response


DIAGNOSTICS_VIEWS = ("grouped", "flat")
NODE_ID = re.compile(r"^(log|dir|agent):\d+$|^cycle:(\d+|none)$")
MAX_DELETE = 10_000


def _diagnostics_view(params: Any) -> str:
    view = params.get("view", "")
    return view if view in DIAGNOSTICS_VIEWS else "grouped"


def _node_detail(request: HttpRequest, node_id: str) -> dict[str, Any]:
    """The detail pane's context; a vanished or foreign node says so instead of a bare 404 (the list may be
    older than a delete made in another tab)."""
    try:
        node = selectors.unified_node(user=request.user, node_id=node_id)
    except Http404:
        return {
            "node_id": node_id,
            "missing": "This entry no longer exists: it was deleted (perhaps in another tab), or the link is "
            "wrong. Reload the page for the current list.",
        }
    return diagnostics_detail.node_detail(node, node_id)


def _open_path(tree: list[dict[str, Any]], selected: str) -> None:
    """Mark the groups to show open: the first fetch cycle, and every group on the way to the selected node."""

    def contains(node: dict[str, Any]) -> bool:
        if node.get("id") == selected:
            if "children" in node or "entries" in node:
                node["open"] = True  # a selected thread shows its entries
            return True
        children = node.get("children") or node.get("entries") or []
        found = any([contains(child) for child in children])  # every branch is marked, not just the first
        if found and ("children" in node or "entries" in node):
            node["open"] = True
        return found

    for position, cycle in enumerate(tree):
        contains(cycle)
        if position == 0:
            cycle["open"] = True


@staff_member_required
@require_GET
def diagnostics(request: HttpRequest) -> HttpResponse:
    view = _diagnostics_view(request.GET)
    node_id = request.GET.get("id", "")
    selected = node_id if NODE_ID.match(node_id) else ""
    tree = selectors.unified_tree(user=request.user, limit=50)
    entries = selectors.tree_entries(tree)
    if view == "flat":
        entries.reverse()
    _open_path(tree, selected)
    context: dict[str, Any] = {
        "tree": tree,
        "entries": entries,
        "view": view,
        "selected": selected,
        "diag": runtime_diagnostics(),
    }
    if selected:
        context.update(_node_detail(request, selected))
    return render(request, "orchestration/pages/diagnostics.html", context)


@staff_member_required
@require_GET
def diagnostics_node(request: HttpRequest) -> HttpResponse:
    node_id = request.GET.get("id", "")
    context = {**_node_detail(request, node_id), "view": _diagnostics_view(request.GET)}
    return render(request, "orchestration/partials/diagnostics_node.html", context)


@staff_member_required
@require_POST
def diagnostics_delete(request: HttpRequest) -> HttpResponse:
    """Delete the posted entries (`entry`: one, a thread's or the ticked ones; with scope=shown every `shown`
    one), the user's own only; back to the list in the same layout."""
    view = _diagnostics_view(request.POST)
    raw = request.POST.getlist("shown") if request.POST.get("scope") == "shown" else request.POST.getlist("entry")
    ids = sorted({int(value.removeprefix("log:")) for value in raw if value.removeprefix("log:").isdigit()})
    if not ids:
        messages.error(request, "Nothing was deleted: no entries were selected. Tick entries in the list first.")
    elif len(ids) > MAX_DELETE:
        messages.error(request, f"Nothing was deleted: at most {MAX_DELETE} entries at a time.")
    else:
        deleted = actions.delete_diagnostics_entries(user=request.user, entry_ids=ids)
        if deleted == len(ids):
            messages.success(request, f"Deleted {deleted} diagnostics entr{'y' if deleted == 1 else 'ies'}.")
        elif deleted == 0:
            gone = "those entries were already gone (deleted in another tab?) or are not yours"
            messages.error(request, f"Nothing was deleted: {gone}.")
        else:
            messages.warning(
                request,
                f"Deleted {deleted} of {len(ids)} entries; the others were already gone or are not yours.",
            )
    query = {"view": view}
    then = request.POST.get("then", "")
    if NODE_ID.match(then):
        query["id"] = then
    return redirect(f"{reverse('runs:diagnostics')}?{urlencode(query)}")


@require_GET
def memories(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()
    scope = request.GET.get("scope", "")
    found = selectors.list_memories_for_user(user=request.user, query=query, scope=scope)
    page = Paginator(found, 50).get_page(request.GET.get("page"))
    context = {"page": page, "q": query, "scope": scope, "scopes": MemoryScope.choices}
    template = "orchestration/partials/memory_table.html" if request.htmx else "orchestration/pages/memories.html"  # type: ignore[attr-defined]
    return render(request, template, context)


@require_POST
def memory_edit(request: HttpRequest, memory_id: int) -> HttpResponse:
    memory = selectors.access_memory(user=request.user, memory_id=memory_id)
    content = request.POST.get("content", "").strip()
    scope = request.POST.get("scope", memory.scope)
    tags = [t.strip() for t in request.POST.get("tags", "").split(",") if t.strip()]
    if not content or scope not in MemoryScope.values:
        messages.error(request, "A memory needs content and a valid scope.")
    else:
        # The page changes the scope, not whom the memory belongs to: a global one stays with no director.
        director = None if scope == MemoryScope.GLOBAL else memory.director
        agent = memory.agent if scope == MemoryScope.LOCAL else None
        try:
            actions.edit_memory(memory=memory, content=content, scope=scope, director=director, agent=agent, tags=tags)
        except ValidationError as exc:
            said = " ".join(message for found in exc.message_dict.values() for message in found)
            messages.error(
                request,
                f"Not saved: {said} This memory belongs to no director; to give it one, add it again from the "
                "director's run (the memory tool) or with POST /api/memory and its directorId.",
            )
        else:
            messages.success(request, "Memory saved.")
    return redirect("runs:memories")


@require_POST
def memory_delete(request: HttpRequest, memory_id: int) -> HttpResponse:
    actions.delete_memory(memory=selectors.access_memory(user=request.user, memory_id=memory_id))
    messages.success(request, "Memory deleted.")
    return redirect("runs:memories")


def _approval_rows(approvals: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "approval": a,
            "request_json": json.dumps((a.request or {}).get("json"), indent=2, ensure_ascii=False),
            "request_query": urlencode((a.request or {}).get("params") or {}),
            "stale": selectors.approval_is_stale(a),
        }
        for a in approvals
    ]


@require_GET
def approvals(request: HttpRequest) -> HttpResponse:
    """Every approval waiting for the user, wherever it came from (a director run, an outside agent)."""
    pending, decided = selectors.approvals_for_user(user=request.user)
    return render(
        request, "orchestration/pages/approvals.html", {"pending": _approval_rows(pending), "decided": decided}
    )


@require_GET
def approval_detail(request: HttpRequest, approval_id: int) -> HttpResponse:
    approval = selectors.access_approval(user=request.user, approval_id=approval_id)
    return render(request, "orchestration/pages/approval.html", {"row": _approval_rows([approval])[0]})


def _back(request: HttpRequest, approval: Any) -> HttpResponse:
    if request.POST.get("back") == "run" and approval.run_id:
        return redirect("runs:detail", run_id=approval.run_id)
    if request.POST.get("back") == "list":
        return redirect("runs:approvals")
    return redirect("runs:approval", approval_id=approval.pk)


@require_POST
def approval_approve(request: HttpRequest, approval_id: int) -> HttpResponse:
    approval = selectors.access_approval(user=request.user, approval_id=approval_id)
    try:
        done = actions.approve(approval=approval)
    except ApprovalError as exc:
        messages.error(request, f"Not performed: {exc}.")
    else:
        if done.status == "done" and done.kind == "mail_action":
            messages.success(request, f"Approved: {done.summary} — sent to the mail server (see Server changes).")
        elif done.status == "done" and done.kind == "reply_send":
            messages.success(request, f"Approved and sent: {done.summary}.")
        elif done.status == "done":
            messages.success(request, "Approved: the event was created and the invitations were sent.")
        elif done.status == "failed" and done.kind == "reply_send":
            messages.error(request, f"Approved, but it was not sent: {done.error}")
        elif done.status == "failed" and done.kind == "mail_action":
            messages.error(request, f"Approved, but it could not be done: {done.error}")
        elif done.status == "failed":
            messages.error(request, f"Approved, but the provider refused: {done.error} You can try again.")
        else:
            messages.info(request, "It is already being performed.")
    return _back(request, approval)


@require_POST
def approval_reject(request: HttpRequest, approval_id: int) -> HttpResponse:
    approval = selectors.access_approval(user=request.user, approval_id=approval_id)
    try:
        actions.reject_approval(approval=approval)
    except ApprovalError as exc:
        messages.error(request, f"Not rejected: {exc}.")
    else:
        messages.success(
            request, "Rejected: nothing was sent." if approval.kind != "mail_action" else "Rejected: nothing changed."
        )
    return _back(request, approval)
