"""Accept / reject / choose / expire, the move journal with undo, and the safety of moves: traversal,
symlink escapes, collisions and permission errors are refused with a clear error and lose nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from apps.organization import actions
from apps.organization.decisions import respond, undo_move
from apps.organization.library import OrganizationDecisionError
from apps.organization.models import FileStatus, Library, LibraryFile, Move, Suggestion, SuggestionStatus
from apps.organization.suggesting import suggest_for_file
from tests.organization.conftest import write


def _suggest(library: Library, relative: str, text: str) -> Suggestion:
    path = write(library.root_path, relative, text)
    file, _ = actions.register_file(library=library, path=path)
    assert file is not None
    suggestion = suggest_for_file(file=file)
    assert suggestion is not None
    return suggestion


def test_accept_moves_into_the_suggested_folder_and_journals_it(seeded_library: Library) -> None:
    s = _suggest(seeded_library, "inbox/april.txt", "QNB Bank account statement April, IBAN and closing balance.")
    assert s.target_folder == "finance/bank", s.reasoning
    respond(suggestion=s, action="accept")
    s.refresh_from_db()
    assert s.status == SuggestionStatus.ACCEPTED and s.final_folder == "finance/bank"
    assert (seeded_library.root_path / "finance/bank/april.txt").is_file()
    assert not (seeded_library.root_path / "inbox/april.txt").exists()
    move = Move.objects.get(suggestion=s)
    assert (move.from_path, move.to_path, move.reason) == ("inbox/april.txt", "finance/bank/april.txt", "accept")
    assert move.sha256 == s.file.sha256


def test_choose_creates_the_folder_and_reject_keeps_the_file(seeded_library: Library) -> None:
    chosen = _suggest(seeded_library, "inbox/lease.txt", "Apartment lease contract, monthly rent and deposit.")
    respond(suggestion=chosen, action="choose", folder="home/lease/")
    assert (seeded_library.root_path / "home/lease/lease.txt").is_file()
    assert LibraryFile.objects.get(pk=chosen.file_id).path == "home/lease/lease.txt"

    rejected = _suggest(seeded_library, "inbox/note.txt", "Random note about nothing in particular.")
    respond(suggestion=rejected, action="reject")
    assert (seeded_library.root_path / "inbox/note.txt").is_file()
    # Rejected: not suggested again, unless forced.
    assert suggest_for_file(file=rejected.file) is None
    forced = suggest_for_file(file=rejected.file, force=True)
    assert forced is not None and forced.pk != rejected.pk
    with pytest.raises(OrganizationDecisionError, match="already rejected"):
        respond(suggestion=rejected, action="accept")


def test_a_file_edited_or_removed_before_the_decision_expires_its_suggestion(seeded_library: Library) -> None:
    edited = _suggest(seeded_library, "inbox/a.txt", "Boarding pass SkyBridge Airlines seat gate.")
    (seeded_library.root_path / "inbox/a.txt").write_text("something else entirely now", encoding="utf-8")
    with pytest.raises(OrganizationDecisionError, match="changed after the suggestion"):
        respond(suggestion=edited, action="choose", folder="travel")
    edited.refresh_from_db()
    assert edited.status == SuggestionStatus.EXPIRED
    assert (seeded_library.root_path / "inbox/a.txt").read_text() == "something else entirely now"

    removed = _suggest(seeded_library, "inbox/b.txt", "School trip permission slip, class teacher.")
    (seeded_library.root_path / "inbox/b.txt").unlink()
    actions.scan_library(library=seeded_library)
    removed.refresh_from_db()
    assert removed.status == SuggestionStatus.EXPIRED and removed.file.status == FileStatus.MISSING


def test_undo_removes_the_folders_the_move_created_only_while_empty(seeded_library: Library) -> None:
    root = seeded_library.root_path
    first = _suggest(seeded_library, "inbox/lease.txt", "Apartment lease contract, monthly rent and deposit.")
    respond(suggestion=first, action="choose", folder="home/lease")
    move = Move.objects.get(suggestion=first)
    assert move.created_folder == "home"
    undo_move(move=move)
    assert (root / "inbox/lease.txt").is_file() and not (root / "home").exists()
    # Into an existing folder nothing was created, so nothing is removed.
    second = _suggest(seeded_library, "inbox/ferry.txt", "Ferry boarding pass, seat and departure gate.")
    respond(suggestion=second, action="choose", folder="travel")
    undo_move(move=Move.objects.get(suggestion=second))
    assert (root / "travel").is_dir()
    # A created folder the owner has since used stays.
    third = _suggest(seeded_library, "inbox/gym.txt", "Gym membership renewal.")
    respond(suggestion=third, action="choose", folder="health/gym")
    write(root, "health/dentist.txt", "Dentist appointment.")
    undo_move(move=Move.objects.get(suggestion=third))
    assert not (root / "health/gym").exists() and (root / "health/dentist.txt").is_file()


def test_collisions_never_overwrite(seeded_library: Library) -> None:
    write(seeded_library.root_path, "travel/ticket.txt", "the original ticket")
    first = _suggest(seeded_library, "inbox/ticket.txt", "RailConnect train ticket, coach seat platform.")
    respond(suggestion=first, action="choose", folder="travel")
    assert (seeded_library.root_path / "travel/ticket.txt").read_text() == "the original ticket"
    assert (seeded_library.root_path / "travel/ticket (2).txt").read_text().startswith("RailConnect")
    assert Move.objects.get(suggestion=first).to_path == "travel/ticket (2).txt"


def test_undo_restores_and_refuses_when_changed_or_occupied(seeded_library: Library) -> None:
    s = _suggest(seeded_library, "inbox/hotel.txt", "Pera Garden Hotel reservation, check-in, room booking.")
    respond(suggestion=s, action="choose", folder="travel/hotels")
    move = Move.objects.get(suggestion=s)
    undo_move(move=move)
    assert (seeded_library.root_path / "inbox/hotel.txt").is_file()
    assert LibraryFile.objects.get(pk=s.file_id).status == FileStatus.INBOX
    with pytest.raises(OrganizationDecisionError, match="already undone"):
        undo_move(move=move)

    # Changed after the move: refused, the file stays where it is.
    again = Suggestion.objects.get(file_id=s.file_id, status=SuggestionStatus.PENDING)
    respond(suggestion=again, action="choose", folder="travel")
    second = Move.objects.get(suggestion=again)
    (seeded_library.root_path / second.to_path).write_text("edited after the move", encoding="utf-8")
    with pytest.raises(OrganizationDecisionError, match="changed after the move"):
        undo_move(move=second)
    assert (seeded_library.root_path / second.to_path).read_text() == "edited after the move"

    # Old path occupied: refused, both files intact.
    third = _suggest(seeded_library, "inbox/rail.txt", "RailConnect train ticket, coach seat platform.")
    respond(suggestion=third, action="choose", folder="travel")
    move3 = Move.objects.get(suggestion=third)
    write(seeded_library.root_path, "inbox/rail.txt", "a new file with the old name")
    with pytest.raises(OrganizationDecisionError, match="taken by another file"):
        undo_move(move=move3)
    assert (seeded_library.root_path / "inbox/rail.txt").read_text() == "a new file with the old name"
    assert (seeded_library.root_path / move3.to_path).read_text().startswith("RailConnect")


@pytest.mark.parametrize("folder", ["../outside", "/etc", "finance/../../x", "inbox/sub", ".hidden", "a//b/.."])
def test_traversal_is_refused(seeded_library: Library, folder: str) -> None:
    s = _suggest(seeded_library, "inbox/t.txt", "text")
    with pytest.raises(OrganizationDecisionError):
        respond(suggestion=s, action="choose", folder=folder)
    assert (seeded_library.root_path / "inbox/t.txt").is_file()
    assert Suggestion.objects.get(pk=s.pk).status == SuggestionStatus.PENDING


def test_symlink_escape_is_refused(seeded_library: Library, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, seeded_library.root_path / "escape")
    s = _suggest(seeded_library, "inbox/s.txt", "text")
    with pytest.raises(OrganizationDecisionError, match="outside the library"):
        respond(suggestion=s, action="choose", folder="escape")
    with pytest.raises(OrganizationDecisionError, match="outside the library"):
        respond(suggestion=s, action="choose", folder="escape/deeper")
    assert list(outside.iterdir()) == []
    assert (seeded_library.root_path / "inbox/s.txt").is_file()


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_permission_errors_are_clear_and_lose_nothing(seeded_library: Library) -> None:
    locked = seeded_library.root_path / "locked"
    locked.mkdir()
    s = _suggest(seeded_library, "inbox/p.txt", "text")
    locked.chmod(0o500)
    try:
        with pytest.raises(OrganizationDecisionError, match="permission"):
            respond(suggestion=s, action="choose", folder="locked")
    finally:
        locked.chmod(0o700)
    assert (seeded_library.root_path / "inbox/p.txt").is_file()
    assert Suggestion.objects.get(pk=s.pk).status == SuggestionStatus.PENDING


def test_accept_without_a_confident_folder_is_refused(library: Library) -> None:
    s = _suggest(library, "inbox/x.txt", "no folders to learn from yet")
    assert s.target_folder == "" and "Nothing to learn from yet" in s.reasoning
    with pytest.raises(OrganizationDecisionError, match="choose one instead"):
        respond(suggestion=s, action="accept")


def test_a_file_where_a_folder_should_be_is_a_clear_error(seeded_library: Library) -> None:
    write(seeded_library.root_path, "notes", "a file named like the folder")
    s = _suggest(seeded_library, "inbox/n.txt", "text")
    with pytest.raises(OrganizationDecisionError, match="exists and is not a folder"):
        respond(suggestion=s, action="choose", folder="notes/2026")
    assert (seeded_library.root_path / "inbox/n.txt").is_file()
    assert (seeded_library.root_path / "notes").read_text() == "a file named like the folder"
