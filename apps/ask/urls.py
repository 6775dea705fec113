from __future__ import annotations

from django.urls import path

from apps.ask import views

app_name = "ask"
urlpatterns = [
    path("", views.panel, name="panel"),
    path("runs/", views.ask_run_create, name="run_create"),
    path("runs/<uuid:run_id>/", views.run_item, name="run"),
    path("runs/<uuid:run_id>/proposal/", views.run_proposal, name="run_proposal"),
    path("settings/", views.ask_settings, name="settings"),
    path("settings/test/", views.ask_settings_test, name="settings_test"),
    path("files/<int:file_id>/", views.library_file, name="file"),
]
