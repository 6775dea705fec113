"""Mailbox OAuth (Gmail, Outlook): mounted as `oauth/` under the `/mail/` prefix."""

from __future__ import annotations

from django.urls import path

from apps.accounts import oauth_views

app_name = "mail_oauth"

urlpatterns = [
    path("gmail/connect/", oauth_views.gmail_connect, name="gmail_connect"),
    path("gmail/callback/", oauth_views.gmail_callback, name="gmail_callback"),
    path("outlook/connect/", oauth_views.outlook_connect, name="outlook_connect"),
    path("outlook/callback/", oauth_views.outlook_callback, name="outlook_callback"),
]
