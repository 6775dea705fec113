"""The Results page: a tree of emails → director runs → workspace items beside a pane for the chosen node.

Thin views: parse → owner-scoped selector (404 for other users' rows) → one action → page or partial. The
page and its htmx updates render the same partials.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.orchestration import selectors as run_selectors
from apps.results import actions, selectors
from apps.results.selectors import ResultFilters
from apps.workspaces.actions import RevisionConflict

NODE_KINDS = ("email", "run", "item")


def _parse_node(raw: str | None) -> tuple[str, int] | None:
    kind, _, number = (raw or "").partition("-")
    if kind in NODE_KINDS and number.isdigit():
        return kind, int(number)
    return None


def _pane_context(request: HttpRequest, kind: str, number: int) -> tuple[str, dict[str, Any]]:
    if kind == "email":
        return "results/partials/pane_email.html", {"pane": selectors.email_pane(user=request.user, message_id=number)}
    if kind == "run":
        return "results/partials/pane_run.html", {"pane": selectors.run_pane(user=request.user, run_id=number)}
    return "results/partials/pane_item.html", {"pane": selectors.item_pane(user=request.user, item_id=number)}


def _tree_context(
    request: HttpRequest, *, before: selectors.TreeCursor | None = None, through: selectors.TreeCursor | None = None
) -> dict[str, Any]:
    filters = ResultFilters.from_query(request.GET)
    tree = selectors.results_tree(user=request.user, filters=filters, before=before, through=through)
    return {"tree": tree, "filters": filters}


@require_GET
def results_page(request: HttpRequest) -> HttpResponse:
    context = {**_tree_context(request), **selectors.filter_choices(user=request.user)}
    node = _parse_node(request.GET.get("node"))
    context["node"] = f"{node[0]}-{node[1]}" if node else ""
    context["pane_template"] = "results/partials/pane_empty.html"
    if node is not None:
        try:
            context["pane_template"], pane = _pane_context(request, *node)
        except Http404:  # deleted meanwhile, or not the user's: the page says so instead of a bare 404
            context["missing_node"] = True
        else:
            context.update(pane)
    context["preference"] = selectors.preference_for(user=request.user)
    return render(request, "results/pages/results.html", context)


@require_GET
def results_tree(request: HttpRequest) -> HttpResponse:
    """The tree under the filters: `before=<cursor>` answers the next page of emails (appended under the
    ones shown, "Show older emails"); `through=<cursor>` refreshes every page loaded down to that cursor."""
    try:
        before = selectors.TreeCursor.parse(request.GET.get("before"))
        through = selectors.TreeCursor.parse(request.GET.get("through"))
    except selectors.BadTreeCursor as exc:
        return HttpResponse(f"{exc}. Reload the page to start from the newest emails.", status=400)
    if before is not None:
        return render(request, "results/partials/tree_page.html", _tree_context(request, before=before))
    context = _tree_context(request, through=through)
    context["node"] = request.GET.get("node") or ""
    return render(request, "results/partials/tree.html", context)


def _node_view(request: HttpRequest, kind: str, number: int) -> HttpResponse:
    template, context = _pane_context(request, kind, number)  # 404 before anything else
    if not getattr(request, "htmx", False):  # a pane URL opened on its own: show it inside the page
        return redirect(f"{reverse('results:page')}?node={kind}-{number}")
    return render(request, template, context)


@require_GET
def email_node(request: HttpRequest, message_id: int) -> HttpResponse:
    return _node_view(request, "email", message_id)


@require_GET
def run_node(request: HttpRequest, run_id: int) -> HttpResponse:
    return _node_view(request, "run", run_id)


@require_GET
def item_node(request: HttpRequest, item_id: int) -> HttpResponse:
    return _node_view(request, "item", item_id)


def _item_form(item: Any, *, values: dict[str, str] | None = None) -> dict[str, Any]:
    """The edit form's fields: the item's current ones, or what the user wrote (kept after an error)."""
    editable = item.encoding == "utf8" and item.mime_type in actions.TEXT_TYPES
    form = {
        "label": item.label,
        "description": item.description,
        "tags": " ".join(item.tags or []),
        "data": item.data if editable else "",
        "revision": str(item.revision),
    }
    form.update(values or {})
    return {"item": item, "form": form, "editable_data": editable}


def _saved_item_pane(request: HttpRequest, item_id: int) -> HttpResponse:
    """The pane of an item just saved; the tree refreshes (its label or a new item shows there)."""
    response = render(
        request, "results/partials/pane_item.html", {"pane": selectors.item_pane(user=request.user, item_id=item_id)}
    )
    response["HX-Trigger"] = "results-changed"
    return response


@require_http_methods(["GET", "POST"])
def edit_item(request: HttpRequest, item_id: int) -> HttpResponse:
    """The item pane's edit form (GET), saved as a new revision (POST). A revision saved meanwhile is a
    conflict: nothing is overwritten, the form keeps what the user wrote and shows the current content."""
    item = selectors.access_item(user=request.user, item_id=item_id)  # 404: not theirs, or deleted
    if request.method == "GET":
        return render(request, "results/partials/item_form.html", _item_form(item))
    values = {name: str(request.POST.get(name) or "") for name in ("label", "description", "tags", "data", "revision")}
    expected = int(values["revision"]) if values["revision"].isdigit() else -1
    context = _item_form(item, values=values)
    try:
        actions.edit_item(
            user=request.user,
            item=item,
            label=values["label"],
            description=values["description"],
            tags=values["tags"],
            data=values["data"] if context["editable_data"] else None,
            expected_revision=expected,
        )
    except RevisionConflict as conflict:
        context["conflict"] = conflict.item
        context["form"]["revision"] = str(conflict.current_revision)  # saving again overwrites, knowingly
        return render(request, "results/partials/item_form.html", context, status=409)
    except actions.ItemInputError as exc:
        context["error"] = str(exc)
        return render(request, "results/partials/item_form.html", context, status=422)
    return _saved_item_pane(request, item.pk)


@require_http_methods(["GET", "POST"])
def add_item(request: HttpRequest, run_id: int) -> HttpResponse:
    """A new item in a run's workspace, written or uploaded by the user (GET: the form)."""
    run = run_selectors.access_run(user=request.user, run_id=run_id)  # 404 for another user's run
    blank = {"label": "", "description": "", "tags": "", "data": "", "mime_type": "text/markdown"}
    if request.method == "GET":
        return render(
            request, "results/partials/add_item_form.html", {"run": run, "form": blank, "types": actions.TEXT_TYPES}
        )
    values = {name: str(request.POST.get(name) or "") for name in blank}
    try:
        item = actions.add_item_to_run(
            user=request.user,
            run=run,
            label=values["label"],
            description=values["description"],
            tags=values["tags"],
            mime_type=values["mime_type"],
            data=values["data"],
            upload=request.FILES.get("file"),
        )
    except actions.ItemInputError as exc:
        context = {"run": run, "form": values, "types": actions.TEXT_TYPES, "error": str(exc)}
        return render(request, "results/partials/add_item_form.html", context, status=422)
    response = _saved_item_pane(request, item.pk)
    response["HX-Push-Url"] = f"{reverse('results:page')}?node=item-{item.pk}"
    return response


@require_POST
def delete_items(request: HttpRequest) -> HttpResponse:
    """Two steps: without `confirm` it answers what would be deleted (a confirmation); with `confirm=soft` or
    `confirm=hard` it deletes exactly the items listed in that confirmation that are still the user's."""
    confirm = request.POST.get("confirm") or ""
    if confirm in ("soft", "hard"):
        ids = [int(raw) for raw in request.POST.getlist("item") if raw.isdigit()]
        deleted = actions.delete_items(user=request.user, item_ids=ids, hard=confirm == "hard")
        response = render(request, "results/partials/deleted.html", {"deleted": deleted, "hard": confirm == "hard"})
        response["HX-Trigger"] = "results-changed"
        return response
    scope = request.POST.get("scope") or ""
    filters = ResultFilters.from_query(request.POST)  # "Deleted items" shown: the deleted ones, to erase
    if scope == "all":
        items = selectors.items_for_filters(user=request.user, filters=filters)
    elif scope == "active":
        nodes = [request.POST.get("active") or ""]
        items = selectors.items_for_nodes(user=request.user, nodes=nodes, deleted=filters.deleted)
    else:
        nodes = request.POST.getlist("node")
        items = selectors.items_for_nodes(user=request.user, nodes=nodes, deleted=filters.deleted)
    rows = list(items.select_related("workspace").only("pk", "label", "mime_type", "workspace__director_name"))
    context = {"items": rows, "scope": scope, "already_deleted": filters.deleted}
    return render(request, "results/partials/confirm_delete.html", context)


@require_POST
def restore_items(request: HttpRequest) -> HttpResponse:
    """Restore soft-deleted items (the `item` ids that are the user's and still deleted). The answer goes to the
    pane and asks the page to refresh the tree (data-refresh-tree, results.js): an HX-Trigger header would fire
    on the Restore button in the tree, which a live refresh may have replaced meanwhile, and be lost."""
    ids = [int(raw) for raw in request.POST.getlist("item") if raw.isdigit()]
    outcome = actions.restore_items(user=request.user, item_ids=ids)
    return render(request, "results/partials/restored.html", {"outcome": outcome})


@require_GET
def events(request: HttpRequest) -> JsonResponse:
    """Notification events since a cursor (ms), from database state: the polling side of /ws/notifications/."""
    try:
        since = selectors.parse_since(request.GET.get("since"))
    except selectors.BadCursor as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    cursor, found = selectors.events_since(user=request.user, since=since)
    preference = selectors.preference_for(user=request.user)
    # A first request (no cursor) gets only the ids of what just happened: already known, not news.
    return JsonResponse(
        {
            "cursor": str(cursor),
            "events": found if since is not None else [],
            "known": [event["id"] for event in found] if since is None else [],
            "browserNotifications": preference.browser_notifications,
            "promptDismissed": preference.prompt_dismissed,
        }
    )


@require_POST
def notification_settings(request: HttpRequest) -> HttpResponse:
    """`browser_notifications=on|off` (the switch on the Results page) and/or `prompt=dismissed` (the
    one-time prompt answered). htmx gets the switch back; scripts get JSON."""
    enabled = request.POST.get("browser_notifications")
    prompt = request.POST.get("prompt")
    preference = actions.update_notification_preference(
        user=request.user,
        browser_notifications={"on": True, "off": False}.get(enabled or ""),
        prompt_dismissed=True if prompt == "dismissed" else None,
    )
    if getattr(request, "htmx", False):
        return render(request, "results/partials/notification_settings.html", {"preference": preference})
    return JsonResponse(
        {"browserNotifications": preference.browser_notifications, "promptDismissed": preference.prompt_dismissed}
    )
