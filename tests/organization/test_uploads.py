"""Organize uploads (issue 32, item 6): one refused file never loses the rest of the batch, and files up to
the README's 200 MB go through the real web server (they got 413 at 16 MB: the organize endpoints were not
upload endpoints for the request-body limit)."""

from __future__ import annotations

import http.client
import io
import json
import time
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest
from django.middleware.csrf import get_token
from django.test import Client

from apps.organization.actions import MAX_UPLOAD_BYTES
from apps.organization.models import Library, LibraryFile

MB = 1024 * 1024
BOUNDARY = "organize-upload-boundary"


def _named(data: bytes, name: str) -> io.BytesIO:
    handle = io.BytesIO(data)
    handle.name = name
    return handle


def _batch() -> list[io.BytesIO]:
    return [
        _named(b"QNB Bank account statement, closing balance.", "statement.txt"),
        _named(b"# my guideline", "guideline.md"),  # the library's own file: refused as an upload
        _named(b"RailConnect train ticket, coach and seat.", "ticket.txt"),
    ]


def test_a_refused_file_keeps_the_rest_of_the_batch_on_the_page_and_the_api(
    client: Client, user: Any, seeded_library: Library
) -> None:
    client.force_login(user)
    page = client.post("/organize/upload/", {"files": _batch()}, HTTP_HX_REQUEST="true")
    assert page.status_code == 200
    shown = page.content.decode()
    assert "Uploaded statement.txt, ticket.txt to the inbox." in shown
    assert "Not everything went in: &#x27;guideline.md&#x27; is not a usable file name." in shown
    api = client.post("/api/organization/upload", {"files": _batch()})
    assert api.status_code == 200, api.content
    body = api.json()
    assert [row["file"] for row in body["saved"]] == ["inbox/statement (2).txt", "inbox/ticket (2).txt"]
    assert body["failed"] == [{"name": "guideline.md", "error": "'guideline.md' is not a usable file name."}]
    assert LibraryFile.objects.filter(library=seeded_library, status="inbox").count() == 4
    only_bad = client.post("/api/organization/upload", {"files": [_named(b"x", "guideline.md")]})
    assert only_bad.status_code == 422 and "not a usable file name" in only_bad.json()["error"]


def _session_and_csrf(user: Any) -> tuple[str, str]:
    client = Client()
    client.force_login(user)
    request = HttpRequest()
    token = get_token(request)
    cookies = (
        f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}; "
        f"{settings.CSRF_COOKIE_NAME}={request.META['CSRF_COOKIE']}"
    )
    return cookies, token


def _post_file(url: str, path: str, *, size: int, name: str, cookies: str, token: str) -> tuple[int, bytes]:
    """A multipart POST of one `size`-byte file, generated while sending (the client holds 1 MB)."""
    fields = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n{token}\r\n'
    head = (
        f'{fields}--{BOUNDARY}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode()
    tail = f"\r\n--{BOUNDARY}--\r\n".encode()
    address = urlsplit(url)
    connection = http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port, timeout=300)
    connection.putrequest("POST", path)
    connection.putheader("Content-Type", f"multipart/form-data; boundary={BOUNDARY}")
    connection.putheader("Content-Length", str(len(head) + size + len(tail)))
    connection.putheader("Cookie", cookies)
    connection.putheader("X-CSRFToken", token)
    connection.putheader("HX-Request", "true")
    connection.endheaders()
    try:
        connection.send(head)
        line = b"Household insurance policy, yearly premium, claims and coverage.\n"
        chunk = (line * (MB // len(line) + 1))[:MB]
        for offset in range(0, size, MB):
            connection.send(chunk[: min(MB, size - offset)])
        connection.send(tail)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_files_up_to_200_mb_upload_through_the_real_server(
    asgi_server: str, user: Any, seeded_library: Library
) -> None:
    cookies, token = _session_and_csrf(user)
    started = time.monotonic()
    status, body = _post_file(
        asgi_server, "/api/organization/upload", size=MAX_UPLOAD_BYTES, name="scan.txt", cookies=cookies, token=token
    )
    print(f"organize upload of {MAX_UPLOAD_BYTES // MB} MB through the API: {time.monotonic() - started:.1f} s")
    assert status == 200, body[:2000]
    saved = json.loads(body)["saved"]
    assert [row["file"] for row in saved] == ["inbox/scan.txt"]
    assert (seeded_library.root_path / "inbox/scan.txt").stat().st_size == MAX_UPLOAD_BYTES
    # The page's form takes more than the old 16 MB too; one byte over 200 MB is refused with the limit.
    status, body = _post_file(
        asgi_server, "/organize/upload/", size=20 * MB, name="form.txt", cookies=cookies, token=token
    )
    assert status == 200 and b"Uploaded form.txt to the inbox." in body, body[:2000]
    status, body = _post_file(
        asgi_server, "/organize/upload/", size=MAX_UPLOAD_BYTES + 1, name="big.txt", cookies=cookies, token=token
    )
    assert status == 200 and b"big.txt is larger than 200 MB" in body, body[:2000]
    assert not (seeded_library.root_path / "inbox/big.txt").exists()
    assert not [p for p in (seeded_library.root_path / "inbox").iterdir() if p.name.startswith(".upload-")]
