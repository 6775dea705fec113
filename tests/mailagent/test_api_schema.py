"""Schemathesis over /api/openapi.json against the real app (mailagent.wsgi-equivalent Django handler, the
project URLconf and middleware) with a logged-in session: bounded, 0 server errors, 0 schema mismatches
(status codes, content types, response bodies)."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

pytestmark = pytest.mark.django_db

CSRF_TOKEN = "schemathesis0csrf0token0of0thirty2chars"[:32]
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# Operations that hand work to the ASGI process's event loop (Ask runs) are covered by their own tests, and
# so is the logout, which would end the session every later call uses (tests/orchestration/test_spec_api.py).
SKIPPED = {("POST", "/api/ask"), ("POST", "/api/auth/logout")}
MAX_EXAMPLES = 6


def load_schema() -> Any:
    from mailagent.api import api

    # The document /api/openapi.json serves (that route needs a login; every operation is exercised below).
    loaded = schemathesis.openapi.from_dict(api.get_openapi_schema())
    loaded.app = with_session_cookie(WSGIHandler())
    return loaded


def with_session_cookie(app: Any) -> Any:
    """The WSGI test client replaces a Cookie header with its own (empty) jar; the session travels in
    X-Session-Cookie and is put back where Django reads it."""

    def wrapped(environ: dict[str, Any], start_response: Any) -> Any:
        if cookie := environ.pop("HTTP_X_SESSION_COOKIE", ""):
            environ["HTTP_COOKIE"] = cookie
        return app(environ, start_response)

    return wrapped


def logged_in_headers() -> dict[str, str]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    user, _ = get_user_model().objects.get_or_create(username="fuzz", defaults={"email": "fuzz@example.com"})
    client = Client()
    client.force_login(user)
    session_cookie = client.cookies["sessionid"].value
    return {"X-Session-Cookie": f"sessionid={session_cookie}; csrftoken={CSRF_TOKEN}", "X-CSRFToken": CSRF_TOKEN}


@pytest.fixture
def keep_test_connection() -> Any:
    """In-process requests must not close the test's database connection at request end (Django's test
    client does the same)."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def test_api_matches_its_schema(keep_test_connection: Any) -> None:
    loaded = load_schema()
    headers = logged_in_headers()
    failures: list[str] = []
    calls = 0
    statuses: dict[int, int] = {}
    for result in loaded.get_all_operations():
        operation = result.ok()
        if (operation.method.upper(), operation.path) in SKIPPED:
            continue

        @given(case=operation.as_strategy())
        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def exercise(case: Any) -> None:
            nonlocal calls
            calls += 1
            try:
                response = case.call_and_validate(headers=headers, checks=CHECKS)
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            except BaseException as exc:
                failures.append(f"{case.method} {case.formatted_path}: {' | '.join(str(exc).splitlines()[2:6])}")

        exercise()
    print(f"schemathesis: {calls} calls, {len(failures)} failures, statuses {sorted(statuses.items())}")
    for failure in sorted(set(failures)):
        print(failure)
    assert failures == []
    # The session works (not everything bounced with 401) and every kind of answer was exercised.
    assert statuses.get(200, 0) > 20 and statuses.get(401, 0) == 0
