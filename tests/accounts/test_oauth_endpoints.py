"""OAuth endpoints must be https: production code has no plain-http path (the tests' fakes are reached
through tests/fakes/loopback_https.py instead)."""

from __future__ import annotations

from typing import Any

import msal
import pytest

from apps.accounts import oauth


def test_a_plain_http_google_endpoint_is_a_configuration_error(settings: Any) -> None:
    settings.GMAIL_CLIENT_ID, settings.GMAIL_CLIENT_SECRET = "client", "secret"
    settings.GOOGLE_OAUTH_TOKEN_URI = "http://127.0.0.1:9/token"
    with pytest.raises(oauth.OAuthNotConfigured, match="must use https"):
        oauth.start_gmail_connect(session={}, redirect_uri="https://mail.example.com/cb")


def test_a_plain_http_microsoft_authority_is_a_configuration_error(settings: Any) -> None:
    settings.OUTLOOK_CLIENT_ID, settings.OUTLOOK_CLIENT_SECRET = "client", "secret"
    settings.OUTLOOK_AUTHORITY_HOST = "http://localhost:9"
    with pytest.raises(oauth.OAuthNotConfigured, match="must use https"):
        oauth.build_outlook_app(msal.SerializableTokenCache())
