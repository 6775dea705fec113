"""Settings pages, mounted at /settings/."""

from __future__ import annotations

from django.urls import URLPattern, path

from apps.setup import director_views, filter_views, settings_views

app_name = "settings"

urlpatterns: list[URLPattern] = [
    path("", settings_views.settings_index, name="index"),
    path("models/", settings_views.models_page, name="models"),
    path("models/test/", settings_views.model_test, name="model_test"),
    path("models/local/", settings_views.local_models, name="local_models"),
    path("models/<int:config_id>/", settings_views.model_edit, name="model_edit"),
    path("models/<int:config_id>/test/", settings_views.model_test_saved, name="model_test_saved"),
    path("models/<int:config_id>/delete/", settings_views.model_delete, name="model_delete"),
    path("directors/", director_views.directors, name="directors"),
    path("directors/add/", director_views.director_add, name="director_add"),
    path("directors/<int:director_id>/", director_views.director_edit, name="director"),
    path("directors/<int:director_id>/delete/", director_views.director_delete, name="director_delete"),
    path("directors/<int:director_id>/agents/", director_views.agent_add, name="agent_add"),
    path("directors/<int:director_id>/agents/order/", director_views.agents_order, name="agents_order"),
    path("agents/<int:agent_id>/", director_views.agent_edit, name="agent"),
    path("agents/<int:agent_id>/delete/", director_views.agent_delete, name="agent_delete"),
    path("filters/", filter_views.filters, name="filters"),
    path("filters/order/", filter_views.filters_order, name="filters_order"),
    path("filters/<int:filter_id>/", filter_views.filter_edit, name="filter"),
    path("filters/<int:filter_id>/toggle/", filter_views.filter_toggle, name="filter_toggle"),
    path("general/", settings_views.general, name="general"),
]
