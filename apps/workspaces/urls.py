"""Inbox and workspace pages, mounted at /inbox/."""

from __future__ import annotations

from django.urls import URLPattern, path

from apps.workspaces import views

app_name = "inbox"

urlpatterns: list[URLPattern] = [
    path("", views.inbox, name="inbox"),
    path("sidebar/", views.inbox_sidebar, name="sidebar"),
    path("badge/", views.inbox_badge, name="badge"),
    path("entries/<uuid:entry_id>/", views.inbox_entry, name="entry"),
    path("entries/<uuid:entry_id>/read/", views.inbox_read, name="read"),
    path("entries/<uuid:entry_id>/reply/", views.inbox_reply, name="reply"),
    path("workspaces/", views.workspaces, name="workspaces"),
    path("workspaces/<int:workspace_id>/", views.workspace_detail, name="workspace"),
    path("workspaces/<int:workspace_id>/tokens/", views.token_create, name="token_create"),
    path("workspaces/<int:workspace_id>/tokens/<int:token_id>/revoke/", views.token_revoke, name="token_revoke"),
]
