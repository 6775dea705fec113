"""Mail pages, mounted by the project at `/mail/`; mailbox OAuth lives under `/mail/oauth/`."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path

from apps.accounts.views import accounts as account_views
from apps.accounts.views import mail as mail_views

app_name = "mail"

urlpatterns: list[URLPattern | URLResolver] = [
    path("", mail_views.mailbox, name="mailbox"),
    path("threads/<int:thread_id>/", mail_views.thread, name="thread"),
    path("threads/<int:thread_id>/unread/", mail_views.thread_mark_unread, name="thread_mark_unread"),
    path("threads/<int:thread_id>/action/", mail_views.thread_action, name="thread_action"),
    path("threads/<int:thread_id>/tags/", mail_views.thread_tags, name="thread_tags"),
    path("server-changes/<int:action_id>/undo/", mail_views.mail_action_undo, name="mail_action_undo"),
    path("messages/<int:message_id>/", mail_views.message, name="message"),
    path("attachments/<int:attachment_id>/download/", mail_views.attachment_download, name="attachment_download"),
    path("accounts/", account_views.accounts, name="accounts"),
    path("accounts/add-imap/", account_views.account_add_imap, name="account_add_imap"),
    path("accounts/import/", account_views.account_import, name="account_import"),
    path("accounts/imports/", account_views.import_jobs_partial, name="import_jobs"),
    path("accounts/<int:account_id>/", account_views.account_detail, name="account_detail"),
    path("accounts/<int:account_id>/sync/", account_views.account_sync, name="account_sync"),
    path("accounts/<int:account_id>/signature/", account_views.account_signature, name="account_signature"),
    path("accounts/<int:account_id>/enabled/", account_views.account_set_enabled, name="account_set_enabled"),
    path("accounts/<int:account_id>/remove/", account_views.account_remove, name="account_remove"),
    path("oauth/", include("apps.accounts.oauth_urls")),
]
