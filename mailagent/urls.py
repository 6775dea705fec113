from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from mailagent import views
from mailagent.api import api

urlpatterns = [
    path("", views.home, name="home"),
    path("diagnostics/", views.diagnostics, name="diagnostics"),
    path("accounts/", include("allauth.urls")),
    path("mail/", include("apps.accounts.urls")),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
]
