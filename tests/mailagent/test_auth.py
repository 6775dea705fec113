from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from django.test import override_settings

from tests.conftest import USER_PASSWORD
from tests.services import REPO_ROOT, subprocess_env

pytestmark = pytest.mark.django_db


def test_health_is_public_and_checks_the_database(client: Any) -> None:
    response = client.get("/api/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


@pytest.mark.parametrize("path", ["/api/diagnostics/runtime", "/api/docs", "/api/openapi.json", "/api/nope"])
def test_api_answers_401_json_without_login(client: Any, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 401
    assert response["Content-Type"].startswith("application/json")
    assert response.json() == {"error": "Authentication required"}


@pytest.mark.parametrize("path", ["/", "/runs/diagnostics/", "/admin/"])
def test_pages_redirect_to_login(client: Any, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_login_page_renders_without_social_providers(client: Any) -> None:
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    body = response.content.decode()
    assert 'name="login"' in body and 'name="password"' in body
    assert "Google" not in body and "Microsoft" not in body


def test_email_password_login_and_logout(client: Any, user: Any) -> None:
    response = client.post("/accounts/login/", {"login": user.email, "password": USER_PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == "/"
    home = client.get("/")
    assert home.status_code == 200
    assert user.email in home.content.decode()
    assert client.get("/api/health").status_code == 200
    client.post("/accounts/logout/")
    assert client.get("/").status_code == 302


def test_wrong_password_is_rejected(client: Any, user: Any) -> None:
    response = client.post("/accounts/login/", {"login": user.email, "password": "wrong"})
    assert response.status_code == 200
    assert client.get("/").status_code == 302


def test_signup_is_closed_unless_enabled(client: Any) -> None:
    response = client.post(
        "/accounts/signup/", {"email": "new@example.com", "password1": USER_PASSWORD, "password2": USER_PASSWORD}
    )
    assert "closed" in response.content.decode().lower()
    with override_settings(MAILAGENT_ALLOW_SIGNUP=True):
        response = client.post(
            "/accounts/signup/", {"email": "new@example.com", "password1": USER_PASSWORD, "password2": USER_PASSWORD}
        )
        assert response.status_code == 302


def test_the_sign_in_page_links_to_sign_up_only_when_it_is_open(client: Any) -> None:
    closed = client.get("/accounts/login/").content.decode()
    assert "/accounts/signup/" not in closed and "created by an administrator" in closed
    with override_settings(MAILAGENT_ALLOW_SIGNUP=True):
        open_page = client.get("/accounts/login/").content.decode()
    assert 'href="/accounts/signup/"' in open_page and "created by an administrator" not in open_page
    assert 'name="login"' in closed and 'name="password"' in closed and "/accounts/password/reset/" in closed


def test_diagnostics_need_staff(logged_in_client: Any) -> None:
    assert logged_in_client.get("/api/diagnostics/runtime").status_code == 403
    assert logged_in_client.get("/runs/diagnostics/").status_code == 302


def test_csrf_is_enforced(user: Any) -> None:
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    response = strict.post("/accounts/login/", {"login": user.email, "password": USER_PASSWORD})
    assert response.status_code == 403


def test_social_login_appears_only_when_configured(tmp_path: Any) -> None:
    code = (
        "from django.test import Client; from django.conf import settings;"
        "from django.test.utils import setup_test_environment; setup_test_environment();"
        "page = Client().get('/accounts/login/').content.decode();"
        "print('allauth.socialaccount.providers.google' in settings.INSTALLED_APPS,"
        " 'allauth.socialaccount.providers.microsoft' in settings.INSTALLED_APPS,"
        " '/accounts/google/login/' in page, 'microsoft' in page.lower())"
    )
    env = subprocess_env(GOOGLE_LOGIN_CLIENT_ID="cid.apps.googleusercontent.com")
    out = subprocess.run(
        [sys.executable, "manage.py", "shell", "--verbosity", "0", "-c", code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False", "True", "False"]


def test_production_redirects_to_https_with_hsts(tmp_path: Any) -> None:
    """The real settings module with DEBUG off (not values set by the test): plain HTTP is redirected, HTTPS
    answers with HSTS, and the session cookie is secure."""
    code = (
        "from django.test import Client; c = Client(); r = c.get('/api/health');"
        " print(r.status_code, r['Location']); s = c.get('/api/health', secure=True);"
        " print(s.status_code, repr(s['Strict-Transport-Security']));"
        " from django.conf import settings; print(settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE)"
    )
    env = dict(os.environ, DATA_DIR=str(tmp_path), DEBUG="0", ALLOWED_HOSTS="testserver", VX_MAILAGENT_KEY="ab" * 32)
    for name in ("SECURE_SSL_REDIRECT", "MAILAGENT_TESTING", "DATABASE_URL"):
        env.pop(name, None)
    out = subprocess.run(
        [sys.executable, "manage.py", "shell", "--verbosity", "0", "-c", code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-3:] == [
        "301 https://testserver/api/health",
        "200 'max-age=31536000; includeSubDomains'",
        "True True",
    ]


def test_check_deploy_passes_with_debug_off(tmp_path: Any) -> None:
    env = dict(os.environ, DATA_DIR=str(tmp_path), DEBUG="0", ALLOWED_HOSTS="mail.example.com")
    env.pop("SECURE_SSL_REDIRECT")
    env.pop("MAILAGENT_TESTING")
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
