"""The first-run wizard, mounted at /setup/."""

from __future__ import annotations

from django.urls import URLPattern, path

from apps.setup import views

app_name = "setup"

urlpatterns: list[URLPattern] = [
    path("", views.setup_index, name="index"),
    path("skip/", views.setup_skip, name="skip"),
    path("reopen/", views.setup_reopen, name="reopen"),
    path("finish/", views.setup_finish, name="finish"),
    path("<slug:step>/", views.setup_step, name="step"),
]
