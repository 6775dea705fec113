"""Files arrive by the watch, the scheduled scan, upload (page and API) and the CLI; each is handled once."""

from __future__ import annotations

import io
import json
import time
from typing import Any

from django.core.management import call_command
from django.test import Client

from apps.organization import actions
from apps.organization.library import get_library, get_settings
from apps.organization.models import FileSource, Library, LibraryFile, Move, Suggestion
from apps.organization.roots import library_base
from apps.organization.tasks import scan_libraries_task
from apps.organization.watcher import LibraryWatch
from tests.organization.conftest import write


def test_watch_and_scan_pick_up_a_new_file_exactly_once(seeded_library: Library) -> None:
    watch = LibraryWatch(settle_seconds=0.2)
    watch.start()
    try:
        write(seeded_library.root_path, "inbox/boarding.txt", "SkyBridge Airlines boarding pass, gate and seat.")
        deadline = time.monotonic() + 10
        handled = 0
        while time.monotonic() < deadline and not handled:
            time.sleep(0.3)
            handled = watch.pump()
        assert handled == 1
    finally:
        watch.stop()
    file = LibraryFile.objects.get(library=seeded_library, path="inbox/boarding.txt")
    assert file.source == FileSource.WATCH
    # The scheduled scan runs after the watch: nothing new, the same single pending suggestion.
    scan_libraries_task()
    actions.scan_library(library=seeded_library)
    assert LibraryFile.objects.filter(library=seeded_library, path="inbox/boarding.txt").count() == 1
    assert Suggestion.objects.filter(file=file).count() == 1

    # And the other way round: the scan first, then a late watch event for the same file.
    path = write(seeded_library.root_path, "inbox/report.txt", "School report card, teacher comments.")
    actions.scan_library(library=seeded_library)
    again = actions.ingest_path(library=seeded_library, path=path, source=FileSource.WATCH)
    late = LibraryFile.objects.get(library=seeded_library, path="inbox/report.txt")
    assert late.source == FileSource.SCAN
    assert again is not None and Suggestion.objects.filter(file=late).count() == 1


def test_upload_on_the_page_with_several_files(client: Client, user: Any, seeded_library: Library) -> None:
    client.force_login(user)
    first = io.BytesIO(b"QNB Bank account statement, closing balance and IBAN.")
    first.name = "may-statement.txt"
    second = io.BytesIO(b"RailConnect train ticket, coach and seat, platform.")
    second.name = "may-statement.txt"  # same name: the second becomes "may-statement (2).txt"
    response = client.post("/organize/upload/", {"files": [first, second]})
    assert response.status_code == 302
    names = sorted(LibraryFile.objects.filter(library=seeded_library, status="inbox").values_list("path", flat=True))
    assert names == ["inbox/may-statement (2).txt", "inbox/may-statement.txt"]
    assert Suggestion.objects.filter(file__library=seeded_library, status="pending").count() == 2
    page = client.get("/organize/")
    assert page.status_code == 200 and b"may-statement (2).txt" in page.content


def test_upload_api_and_cli(client: Client, user: Any, seeded_library: Library) -> None:
    client.force_login(user)
    upload = io.BytesIO(b"Pera Garden Hotel reservation, check-in, room.")
    upload.name = "hotel.txt"
    response = client.post("/api/organization/upload", {"files": [upload]})
    assert response.status_code == 200, response.content
    assert response.json()["saved"][0]["file"] == "inbox/hotel.txt"

    write(seeded_library.root_path, "inbox/flight.txt", "SkyBridge Airlines e-ticket, flight, seat, gate.")
    out = io.StringIO()
    call_command("organize", "scan", "--json", stdout=out)
    rows = json.loads(out.getvalue())
    assert {row["file"] for row in rows} == {"inbox/hotel.txt", "inbox/flight.txt"}
    for row in rows:
        assert set(row) == {"id", "file", "folder", "confidence", "alternatives", "source"}
        assert row["source"] == "classifier" and len(row["alternatives"]) == 3
        assert all(set(a) == {"folder", "confidence", "evidence"} for a in row["alternatives"])
        assert all(isinstance(e, str) for a in row["alternatives"] for e in a["evidence"])
    flight = next(row for row in rows if row["file"] == "inbox/flight.txt")
    out = io.StringIO()
    call_command("organize", "respond", str(flight["id"]), "choose", "--folder", "travel/flights", "--json", stdout=out)
    decided = json.loads(out.getvalue())
    assert decided["status"] == "accepted" and decided["file"] == "travel/flights/flight.txt"
    out = io.StringIO()
    call_command("organize", "undo", str(decided["move"]), stdout=out)
    assert (seeded_library.root_path / "inbox/flight.txt").is_file()
    assert Move.objects.get(pk=decided["move"]).undone_at is not None


def test_configure_cli_sets_root_and_threshold(user: Any) -> None:
    out = io.StringIO()
    root = library_base(user.pk) / "lib"
    call_command("organize", "configure", "--root", str(root), "--suggest-threshold", "0.7", "--auto-move", stdout=out)
    assert (root / "inbox").is_dir()
    settings = get_settings(owner=user)
    assert settings.suggest_threshold == 0.7 and settings.auto_move
    assert get_library(owner=user).root == str(root)


def test_library_files_are_in_the_search_index(
    seeded_library: Library, django_capture_on_commit_callbacks: Any
) -> None:
    from apps.search.backends import get_search_backend
    from apps.search.backends.base import SearchFilters
    from apps.search.models import SearchDocument

    with django_capture_on_commit_callbacks(execute=True):
        file = actions.save_upload(
            library=seeded_library, name="insurance.txt", chunks=[b"Household insurance policy, yearly premium."]
        )
    document = SearchDocument.objects.get(kind="file", object_id=file.pk)
    assert document.owner_id == seeded_library.owner_id and document.folder == "inbox"
    hits = get_search_backend().keyword("insurance premium", filters=SearchFilters(kinds=("file",)))
    assert [hit.document_id for hit in hits] == [document.pk]
