"""The Results page, mounted at /results/."""

from __future__ import annotations

from django.urls import URLPattern, path

from apps.results import views

app_name = "results"

urlpatterns: list[URLPattern] = [
    path("", views.results_page, name="page"),
    path("tree/", views.results_tree, name="tree"),
    path("emails/<int:message_id>/", views.email_node, name="email"),
    path("runs/<int:run_id>/", views.run_node, name="run"),
    path("items/<int:item_id>/", views.item_node, name="item"),
    path("items/<int:item_id>/edit/", views.edit_item, name="edit_item"),
    path("runs/<int:run_id>/add-item/", views.add_item, name="add_item"),
    path("delete/", views.delete_items, name="delete"),
    path("restore/", views.restore_items, name="restore"),
    path("events/", views.events, name="events"),
    path("notifications/", views.notification_settings, name="notifications"),
]
