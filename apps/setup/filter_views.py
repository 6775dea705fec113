"""Filters on /settings/filters/: every filter with edit, enable/disable, reorder, and the existing dry
run (routing's "Test filters" partial). Writes go through apps.routing.actions."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from apps.routing import actions as routing_actions
from apps.routing import selectors as routing_selectors
from apps.routing.forms import FilterForm, TestFiltersForm, add_validation_errors
from apps.routing.models import Filter
from apps.setup.director_views import move_in


class FilterEditForm(FilterForm):
    enabled = forms.BooleanField(required=False)


def _filters_page(request: HttpRequest, form: FilterForm | None = None, status: int = 200) -> HttpResponse:
    context = {
        "filters": list(routing_selectors.list_filters_for_user(user=request.user)),
        "form": form or FilterForm(owner=request.user),
        "test_form": TestFiltersForm(owner=request.user),
        "has_directors": routing_selectors.list_directors_for_user(user=request.user).exists(),
    }
    return render(request, "setup/pages/filters.html", context, status=status)


@require_http_methods(["GET", "POST"])
def filters(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _filters_page(request)
    form = FilterForm(request.POST, owner=request.user)
    if form.is_valid() and (item := form.create_filter()) is not None:
        messages.success(request, f"Filter /{item.regex}/ → {item.director.name} added.")
        if form.warning:
            messages.warning(request, form.warning)
        return redirect("settings:filters")
    return _filters_page(request, form, status=400)


def _filter_initial(item: Filter) -> dict[str, Any]:
    return {
        "director": item.director_id,
        "field": item.field,
        "regex": item.regex,
        "case_insensitive": item.case_insensitive,
        "description": item.description,
        "enabled": item.enabled,
        "save_attachments": item.save_attachments,
        "mail_action": item.mail_action,
        "mail_action_folder": item.mail_action_folder,
        "mail_action_tag": item.mail_action_tag,
    }


@require_http_methods(["GET", "POST"])
def filter_edit(request: HttpRequest, filter_id: int) -> HttpResponse:
    item = routing_selectors.access_filter(user=request.user, filter_id=filter_id)
    status = 200
    if request.method == "POST":
        form = FilterEditForm(request.POST, owner=request.user)
        if form.is_valid():
            data = form.cleaned_data
            try:
                routing_actions.update_filter(
                    item=item,
                    director=data["director"],
                    field=data["field"],
                    regex=data["regex"],
                    case_insensitive=data["case_insensitive"],
                    description=data["description"],
                    enabled=data["enabled"],
                    save_attachments=data["save_attachments"],
                    mail_action=data.get("mail_action") or "",
                    mail_action_folder=data.get("mail_action_folder") or "",
                    mail_action_tag=data.get("mail_action_tag") or "",
                )
            except ValidationError as exc:
                add_validation_errors(form, exc)
            else:
                messages.success(request, f"Filter /{item.regex}/ saved.")
                return redirect("settings:filters")
        status = 400
    else:
        form = FilterEditForm(owner=request.user, initial=_filter_initial(item))
    test_form = TestFiltersForm(owner=request.user, initial={"director": item.director_id})
    context = {"item": item, "form": form, "test_form": test_form}
    return render(request, "setup/pages/filter_edit.html", context, status=status)


@require_POST
def filter_toggle(request: HttpRequest, filter_id: int) -> HttpResponse:
    item = routing_selectors.access_filter(user=request.user, filter_id=filter_id)
    routing_actions.update_filter(item=item, enabled=not item.enabled)
    messages.success(request, f"Filter /{item.regex}/ {'enabled' if item.enabled else 'disabled'}.")
    return redirect("settings:filters")


@require_POST
def filters_order(request: HttpRequest) -> HttpResponse:
    current = [f.pk for f in routing_selectors.list_filters_for_user(user=request.user)]
    ordered = [int(v) for v in request.POST.getlist("order") if v.isdigit()] or move_in(
        current, request.POST.get("move", ""), request.POST.get("direction", "")
    )
    routing_actions.reorder_filters(user=request.user, ordered_ids=ordered)
    if request.htmx:  # type: ignore[attr-defined]
        return HttpResponse(status=204)
    return redirect("settings:filters")
