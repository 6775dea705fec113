"""Run pages, mounted at /runs/."""

from __future__ import annotations

from django.urls import URLPattern, path

from apps.orchestration import views

app_name = "runs"

urlpatterns: list[URLPattern] = [
    path("", views.runs, name="list"),
    path("table/", views.runs_table, name="table"),
    path("<int:run_id>/", views.run_detail, name="detail"),
    path("<int:run_id>/live/", views.run_live, name="live"),
    path("<int:run_id>/retry/", views.run_retry, name="retry"),
    path("items/<int:item_id>/download/", views.item_download, name="item_download"),
    path("diagnostics/", views.diagnostics, name="diagnostics"),
    path("diagnostics/node/", views.diagnostics_node, name="diagnostics_node"),
    path("diagnostics/delete/", views.diagnostics_delete, name="diagnostics_delete"),
    path("approvals/", views.approvals, name="approvals"),
    path("approvals/<int:approval_id>/", views.approval_detail, name="approval"),
    path("approvals/<int:approval_id>/approve/", views.approval_approve, name="approval_approve"),
    path("approvals/<int:approval_id>/reject/", views.approval_reject, name="approval_reject"),
    path("memory/", views.memories, name="memories"),
    path("memory/<int:memory_id>/edit/", views.memory_edit, name="memory_edit"),
    path("memory/<int:memory_id>/delete/", views.memory_delete, name="memory_delete"),
]
