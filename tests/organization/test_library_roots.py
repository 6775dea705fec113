"""Library roots stay where the server puts them (issue 32, item 1). The probe's attack: a logged-in user set
their library root to the data directory (the secret key and db.sqlite3 became searchable files), to another
user's library (read and moved their files), and to the virtualenv's site-packages (an uploaded .pth ran on
the next start). Each step is tried through the real API and the real Organize form, and inside a legitimate
root through symlinks, '..', hard links and a FIFO."""

from __future__ import annotations

import json
import os
import site
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from apps.organization import actions, indexing
from apps.organization.library import get_library
from apps.organization.models import Library, LibraryFile
from apps.organization.roots import library_base
from apps.organization.watcher import LibraryWatch
from apps.search.models import SearchDocument
from tests.organization.conftest import write

SECRET_WORD = "zebracorn-secret-7731"  # a word only the probe's secret file contains


def _put_root(client: Client, root: str) -> Any:
    return client.put("/api/settings/organization", json.dumps({"libraryRoot": root}), content_type="application/json")


def _post_form_root(client: Client, root: str) -> Any:
    return client.post("/organize/settings/", {"root": root, "suggest_threshold": "0.8", "auto_move_threshold": "0.95"})


@pytest.fixture
def victim(db: Any) -> Library:
    other = get_user_model().objects.create_user(username="victim", email="victim@example.com", password="x")
    library = get_library(owner=other)
    write(library.root_path, "taxes/return-2025.txt", "Victim's tax return")
    actions.scan_library(library=library)
    return library


def _attack_targets(victim: Library) -> dict[str, str]:
    return {
        "data directory": str(settings.DATA_DIR),
        "database folder's parent": str(Path(settings.DATA_DIR).parent),
        "another user's library": victim.root,
        "a folder inside another user's library": str(Path(victim.root) / "taxes"),
        "site-packages": site.getsitepackages()[0],
        "filesystem root": "/",
        "'..' out of my own base": "",  # filled in per user below
    }


def test_a_user_cannot_point_the_library_anywhere_but_their_own_base(
    client: Client, user: Any, victim: Library
) -> None:
    client.force_login(user)
    own = get_library(owner=user)
    targets = _attack_targets(victim)
    targets["'..' out of my own base"] = f"{library_base(user.pk)}/../{victim.owner_id}"
    for what, target in targets.items():
        refused = _put_root(client, target)
        assert refused.status_code == 422, (what, refused.content)
        assert "not an allowed library folder" in refused.json()["error"] or "overlaps" in refused.json()["error"]
        page = _post_form_root(client, target)
        assert page.status_code == 302, what
        shown = client.get("/organize/").content.decode()
        assert "not an allowed library folder" in shown or "overlaps" in shown, what
        assert Library.objects.get(pk=own.pk).root == own.root, what
    # Inside their own base any folder is fine.
    accepted = _put_root(client, str(library_base(user.pk) / "papers"))
    assert accepted.status_code == 200 and accepted.json()["libraryRoot"].endswith("/papers")
    assert accepted.json()["libraryRootProblem"] == ""
    # The victim's files were never reachable: nothing of theirs became this user's.
    assert not LibraryFile.objects.filter(library__owner=user, path__contains="return-2025").exists()


def test_a_symlinked_root_inside_my_base_pointing_at_the_data_directory_is_refused(
    client: Client, user: Any, victim: Library
) -> None:
    client.force_login(user)
    base = library_base(user.pk)
    base.mkdir(parents=True, exist_ok=True)
    (base / "data").symlink_to(settings.DATA_DIR)
    (base / "theirs").symlink_to(victim.root)
    for link in ("data", "theirs"):
        refused = _put_root(client, str(base / link))
        assert refused.status_code == 422, refused.content


def test_a_superuser_may_use_allowed_parents_but_never_the_server_s_own_folders(
    client: Client, staff_user: Any, victim: Library, tmp_path: Path
) -> None:
    client.force_login(staff_user)
    settings.ORGANIZATION_LIBRARY_PARENTS = [Path("/")]  # the widest a superuser could allow
    try:
        for what, target in _attack_targets(victim).items():
            if not target:
                continue
            refused = _put_root(client, target)
            assert refused.status_code == 422, (what, refused.content)
            assert "overlaps" in refused.json()["error"], what
        shared = tmp_path / "shared-archive"
        accepted = _put_root(client, str(shared))
        assert accepted.status_code == 200, accepted.content
        assert (shared / "inbox").is_dir()
    finally:
        settings.ORGANIZATION_LIBRARY_PARENTS = []
    # Without the allowed parent the same root is refused, and the stored one stops being used.
    assert "MAILAGENT_LIBRARY_PARENTS" in _put_root(client, str(tmp_path / "elsewhere")).json()["error"]
    assert "not used until you change it" in client.get("/api/settings/organization").json()["libraryRootProblem"]


def test_escapes_inside_a_legitimate_root_are_never_read_moved_or_indexed(
    client: Client, user: Any, seeded_library: Library, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(user)
    root = seeded_library.root_path
    secret = tmp_path / "outside-secret.txt"
    secret.write_text(f"server secret {SECRET_WORD}", encoding="utf-8")
    (root / "inbox" / "key-link.txt").symlink_to(secret)
    (root / "inbox" / "data-dir").symlink_to(settings.DATA_DIR, target_is_directory=True)
    (root / "leak").symlink_to(settings.DATA_DIR, target_is_directory=True)
    os.link(secret, root / "inbox" / "hard-link.txt")
    os.mkfifo(root / "inbox" / "pipe.txt")
    with django_capture_on_commit_callbacks(execute=True):
        organized = client.post("/api/inbox/organize", "{}", content_type="application/json")
    assert organized.status_code == 200, organized.content
    assert any("hard links" in error for error in organized.json()["errors"])
    paths = set(LibraryFile.objects.filter(library=seeded_library).values_list("path", flat=True))
    assert not {p for p in paths if "link" in p or "pipe" in p or "data-dir" in p or p.startswith("leak/")}
    assert not SearchDocument.objects.filter(body__contains=SECRET_WORD).exists()
    assert not SearchDocument.objects.filter(kind="file", title__in=["secret_key", "db.sqlite3"]).exists()

    # Choosing a folder through a link or '..' is refused, and the file stays.
    write(root, "inbox/ticket.txt", "RailConnect train ticket, coach, seat and platform.")
    organized = client.post(
        "/api/inbox/organize", json.dumps({"paths": ["inbox/ticket.txt"]}), content_type="application/json"
    )
    [suggestion] = organized.json()["suggestions"]
    for folder in ("leak", "leak/inside", "../outside", "travel/../../x"):
        refused = client.post(
            f"/api/inbox/suggestions/{suggestion['id']}/respond",
            json.dumps({"action": "choose", "targetFolder": folder}),
            content_type="application/json",
        )
        assert refused.status_code == 409, (folder, refused.content)
    assert (root / "inbox/ticket.txt").is_file() and not list(Path(settings.DATA_DIR).glob("**/ticket.txt"))

    # A registered file swapped for a link to the secret afterwards is not served by Ask's file link.
    ticket = LibraryFile.objects.get(library=seeded_library, path="inbox/ticket.txt")
    (root / "inbox/ticket.txt").unlink()
    (root / "inbox/ticket.txt").symlink_to(secret)
    served = client.get(f"/ask/files/{ticket.pk}/")
    assert served.status_code == 410 and SECRET_WORD.encode() not in b"".join(served)
    # guideline.md hard-linked to the secret is not shown on the page.
    os.link(secret, root / "guideline.md")
    assert SECRET_WORD not in client.get("/organize/").content.decode()


def test_a_root_stored_outside_the_allowed_folders_is_not_used_until_changed(
    client: Client, user: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    """A library configured before roots were confined: the page says why and what to do; the scan, the
    watch and uploads leave it alone, and what was read from it leaves the search index."""
    library = get_library(owner=user)
    old = tmp_path / "old-library"
    write(old, "inbox/note.txt", f"An old note {SECRET_WORD}")
    Library.objects.filter(pk=library.pk).update(root=str(old))  # as an earlier version stored it and read it:
    library.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        read_before = LibraryFile.objects.create(library=library, path="inbox/note.txt", status="inbox")
        indexing.index_files([read_before])
    assert SearchDocument.objects.filter(kind="file", object_id=read_before.pk).exists()
    client.force_login(user)
    page = client.get("/organize/").content.decode()
    assert "Your library folder is not used until you change it" in page and str(library_base(user.pk)) in page
    assert client.get("/api/settings/organization").json()["libraryRootProblem"]
    with django_capture_on_commit_callbacks(execute=True):
        result = actions.scan_library(library=library)  # the scheduled scan, every 5 minutes
    assert result.errors and result.missing == 1
    assert not LibraryFile.objects.filter(library=library).exclude(status="missing").exists()
    assert not SearchDocument.objects.filter(kind="file", object_id=read_before.pk).exists()
    upload = client.post("/api/organization/upload", {"files": [_named(b"x", "new.txt")]})
    assert upload.status_code == 422 and "not used until you change it" in upload.json()["error"]
    assert not (old / "inbox" / "new.txt").exists()
    watch = LibraryWatch()
    watch.sync_roots()
    assert library.pk not in watch.watched
    # Fixing it is one save of an allowed root.
    assert _put_root(client, str(library_base(user.pk))).status_code == 200
    assert client.get("/api/settings/organization").json()["libraryRootProblem"] == ""


def _named(data: bytes, name: str) -> Any:
    import io

    handle = io.BytesIO(data)
    handle.name = name
    return handle
