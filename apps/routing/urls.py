"""Routing pages, mounted at /routing/."""

from __future__ import annotations

from django.urls import URLPattern, path

from apps.routing import manual_views, views

app_name = "routing"

urlpatterns: list[URLPattern] = [
    path("filters/", views.filters, name="filters"),
    path("filters/test/", views.filters_test, name="filters_test"),
    path("filters/<int:filter_id>/delete/", views.filter_delete, name="filter_delete"),
    path("fetcher/", views.fetcher, name="fetcher"),
    path("fetcher/status/", views.fetcher_status, name="fetcher_status"),
    path("fetcher/<str:command>/", views.fetcher_control, name="fetcher_control"),
    path("threads/<int:thread_id>/run-director/", manual_views.thread_run_director, name="thread_run_director"),
]
