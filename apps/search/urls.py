from __future__ import annotations

from django.urls import path

from apps.search import views

app_name = "search"
urlpatterns = [
    path("", views.search_results, name="results"),
    path("files/<int:file_id>/thumbnail/", views.file_thumbnail, name="file_thumbnail"),
    path("progress/", views.progress, name="progress"),
    path("saved/", views.saved_search_create, name="saved_create"),
    path("saved/<int:saved_search_id>/delete/", views.saved_search_delete, name="saved_delete"),
]
