"""Library files in the one search index: found by name and by content with mail, `kind:file` / `kind:mail`,
file rows (name, folder, first lines, thumbnail of an image), and never visible to another user."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from apps.accounts.actions import create_local_account
from apps.accounts.models import Message
from apps.organization import actions as organization
from apps.organization.library import get_library
from apps.organization.models import LibraryFile
from apps.organization.roots import library_base
from apps.search import actions as search_actions

pytestmark = pytest.mark.django_db


def _write(root: Path, relative: str, content: str | bytes) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)


@pytest.fixture
def library_files(user: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any) -> dict[str, LibraryFile]:
    organization.update_settings(owner=user, changes={"root": str(library_base(user.pk) / "library")})
    library = get_library(owner=user)
    picture = io.BytesIO()
    Image.new("RGB", (640, 480), (200, 40, 40)).save(picture, format="PNG")
    _write(
        library.root_path,
        "finance/lease/flat-lease-2026.txt",
        "Lease agreement for the flat in Kreuzberg. Rent 1,240 EUR.",
    )
    _write(library.root_path, "inbox/passport-scan.png", picture.getvalue())
    with django_capture_on_commit_callbacks(execute=True):
        organization.scan_library(library=library, suggest=False)
    return {f.name: f for f in LibraryFile.objects.filter(library=library)}


def test_files_are_found_by_name_and_content_with_mail(
    logged_in_client: Any, library_files: dict[str, LibraryFile], user: Any
) -> None:
    account = create_local_account(owner=user, name="main", address="owner@example.com")
    message = Message.objects.create(
        account=account, provider_id="p1", dedupe_key="lease@x", message_id="lease@x", folder="INBOX",
        subject="Your new lease", body_text="The lease agreement is attached; rent is due monthly.",
    )  # fmt: skip
    search_actions.index_messages(message_ids=[message.pk])
    both = logged_in_client.get("/api/search", {"q": "lease agreement", "mode": "keyword"}).json()
    assert {row["kind"] for row in both["results"]} == {"mail", "file"} and both["count"] == 2
    file_row = next(row for row in both["results"] if row["kind"] == "file")
    lease = library_files["flat-lease-2026.txt"]
    assert (file_row["file_id"], file_row["path"], file_row["folder"]) == (lease.pk, lease.path, "finance/lease")
    assert "<mark>Lease</mark>" in file_row["snippet"]
    only_files = logged_in_client.get("/api/search", {"q": "lease kind:file", "mode": "keyword"}).json()
    assert [row["kind"] for row in only_files["results"]] == ["file"]
    only_mail = logged_in_client.get("/api/search", {"q": "lease kind:mail", "mode": "keyword"}).json()
    assert [row["kind"] for row in only_mail["results"]] == ["mail"]
    assert logged_in_client.get("/api/search", {"q": "lease -kind:file", "mode": "keyword"}).json()["count"] == 1
    # By name: words of the file name, filename:, and a library folder with in:.
    by_name = logged_in_client.get("/api/search", {"q": "passport scan"}).json()
    assert by_name["results"][0]["path"] == "inbox/passport-scan.png"
    assert logged_in_client.get("/api/search", {"q": "filename:passport"}).json()["count"] == 1
    assert logged_in_client.get("/api/search", {"q": "in:finance kind:file"}).json()["count"] == 1
    # The page shows a file row with its folder and, for an image, a thumbnail the owner can load.
    html = logged_in_client.get("/search/", {"q": "passport"}).content.decode()
    image = library_files["passport-scan.png"]
    assert 'data-kind="file"' in html and f"/search/files/{image.pk}/thumbnail/" in html and "in inbox" in html
    thumbnail = logged_in_client.get(f"/search/files/{image.pk}/thumbnail/")
    assert thumbnail.status_code == 200 and thumbnail["Content-Type"] == "image/png"
    assert max(Image.open(io.BytesIO(thumbnail.content)).size) <= 160
    icon = logged_in_client.get(f"/search/files/{lease.pk}/thumbnail/")  # not an image: an icon
    assert icon.status_code == 200 and icon["Content-Type"] == "image/svg+xml" and b">TXT<" in icon.content


def test_files_stay_private(client: Any, library_files: dict[str, LibraryFile], django_user_model: Any) -> None:
    django_user_model.objects.create_user(username="other", email="other@example.com", password="pw-123456789")
    client.login(username="other", password="pw-123456789")
    for query in ("lease agreement", "kind:file", "passport", "filename:lease"):
        data = client.get("/api/search", {"q": query}).json()
        assert data["count"] == 0 and data["results"] == [], query
        assert "flat-lease" not in client.get("/search/", {"q": query}).content.decode()
    image = library_files["passport-scan.png"]
    assert client.get(f"/search/files/{image.pk}/thumbnail/").status_code == 404
