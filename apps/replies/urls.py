"""Reply drafts, mounted by the project at `/replies/`."""

from __future__ import annotations

from django.urls import path

from apps.replies import views

app_name = "replies"

urlpatterns = [
    path("", views.drafts, name="drafts"),
    path("new/item/<int:item_id>/", views.from_item, name="from_item"),
    path("new/ask-draft/<int:ask_draft_id>/", views.from_ask_draft, name="from_ask_draft"),
    path("<int:draft_id>/", views.edit, name="edit"),
    path("<int:draft_id>/mode/", views.set_mode, name="set_mode"),
    path("<int:draft_id>/confirm/", views.confirm, name="confirm"),
    path("<int:draft_id>/send/", views.send, name="send"),
    path("<int:draft_id>/consent/", views.consent, name="consent"),
    path("<int:draft_id>/discard/", views.discard, name="discard"),
    path("accounts/<int:account_id>/smtp/", views.smtp_settings, name="smtp_settings"),
]
