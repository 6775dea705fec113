from __future__ import annotations

from django.urls import URLPattern, path

from apps.dashboard import views

# No app_name: the home page keeps its project-wide URL name `home` (base.html, login redirects).
urlpatterns: list[URLPattern] = [
    path("", views.home, name="home"),
]
