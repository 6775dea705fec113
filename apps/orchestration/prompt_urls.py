"""The prompt playground, mounted at /prompts/."""

from __future__ import annotations

from django.urls import URLPattern, path

from apps.orchestration import playground_views as views

app_name = "prompts"

urlpatterns: list[URLPattern] = [
    path("", views.prompt_list, name="list"),
    path("new/", views.prompt_create, name="create"),
    path("<int:prompt_id>/", views.playground, name="playground"),
    path("<int:prompt_id>/save/", views.playground_save, name="save"),
    path("<int:prompt_id>/preview/", views.playground_preview, name="preview"),
    path("<int:prompt_id>/try/", views.playground_try, name="try"),
    path("<int:prompt_id>/duplicate/", views.prompt_duplicate, name="duplicate"),
]
