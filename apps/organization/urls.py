from __future__ import annotations

from django.urls import path

from apps.organization import views

app_name = "organization"
urlpatterns = [
    path("", views.page, name="page"),
    path("suggestions/<int:suggestion_id>/respond/", views.respond_view, name="respond"),
    path("suggestions/<int:suggestion_id>/transcript/", views.transcript_view, name="transcript"),
    path("suggestions/bulk-accept/", views.bulk_accept, name="bulk_accept"),
    path("moves/<int:move_id>/undo/", views.undo_view, name="undo"),
    path("upload/", views.upload, name="upload"),
    path("scan/", views.scan, name="scan"),
    path("settings/", views.settings_view, name="settings"),
    path("guideline/", views.guideline_view, name="guideline"),
    path("proposals/<int:proposal_id>/<str:decision>/", views.proposal_view, name="proposal"),
]
