"""Runs, run detail (workspace results + transcript), diagnostics tree and memories.

Thin views: parse → access selector (404 for other users' rows) → one action → page or partial. Pages of
running work poll their partials with htmx; the partial and the page render the same template.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header, urlencode
from django.views.decorators.http import require_GET, require_POST

from apps.orchestration import actions, selectors
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


@staff_member_required
@require_GET
def diagnostics(request: HttpRequest) -> HttpResponse:
    tree = selectors.unified_tree(user=request.user, limit=50)
    return render(request, "orchestration/pages/diagnostics.html", {"tree": tree, "diag": runtime_diagnostics()})


@staff_member_required
@require_GET
def diagnostics_node(request: HttpRequest) -> HttpResponse:
    node_id = request.GET.get("id", "")
    node = selectors.unified_node(user=request.user, node_id=node_id)
    return render(request, "orchestration/partials/diagnostics_node.html", {"node": node, "node_id": node_id})


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
        actions.update_memory(memory=memory, content=content, tags=tags, scope=scope)
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
    except actions.ApprovalError as exc:
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
    except actions.ApprovalError as exc:
        messages.error(request, f"Not rejected: {exc}.")
    else:
        messages.success(
            request, "Rejected: nothing was sent." if approval.kind != "mail_action" else "Rejected: nothing changed."
        )
    return _back(request, approval)
