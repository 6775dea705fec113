"""Learning: the classifier learns from the owner's choices, abstains instead of forcing the majority folder,
auto-moves over the threshold (undoably). The real filing stream is in test_classifier.py."""

from __future__ import annotations

from apps.organization import actions
from apps.organization.decisions import respond, undo_move
from apps.organization.models import FileStatus, Library, Move, Suggestion, SuggestionStatus
from apps.organization.suggesting import suggest_for_file
from tests.organization.conftest import SEED_FILES, write


def _upload(library: Library, name: str, text: str) -> Suggestion:
    file = actions.save_upload(library=library, name=name, chunks=[text.encode()])
    suggestion = suggest_for_file(file=file)
    assert suggestion is not None
    return suggestion


def test_the_next_similar_file_goes_where_the_owner_chose(seeded_library: Library) -> None:
    first = _upload(seeded_library, "lease-2026.txt", "Apartment lease agreement: monthly rent, deposit, landlord.")
    respond(suggestion=first, action="choose", folder="home/lease")
    second = _upload(seeded_library, "lease-renewal.txt", "Lease renewal from the landlord: new monthly rent, deposit.")
    ranked = [second.target_folder] if second.target_folder else [a["folder"] for a in second.alternatives]
    assert ranked[0] == "home/lease", second.reasoning


def test_a_decision_into_a_known_folder_updates_the_weights_and_keeps_the_vocabulary(seeded_library: Library) -> None:
    from apps.organization import learning

    before = learning.load(seeded_library)
    assert before is not None and not before.incremental and before.counts["travel"] == 4
    suggestion = _upload(seeded_library, "ferry.txt", "Ferry ticket Istanbul to Bursa, seat 12, departure pier.")
    respond(suggestion=suggestion, action="choose", folder="travel")
    _upload(seeded_library, "bus.txt", "Bus ticket Ankara, seat 3.")  # the stale classifier retrains first
    after = learning.load(seeded_library)
    assert after is not None and after is not before
    assert after.incremental and after.counts["travel"] == 5 and after.trained_on == 13
    assert after.words is before.words and after.temperature == before.temperature  # kept, not refitted
    # A new folder changes the classes: that training is a full fit again.
    other = _upload(seeded_library, "gym.txt", "Gym membership renewal, monthly fee, locker.")
    respond(suggestion=other, action="choose", folder="health")
    _upload(seeded_library, "yoga.txt", "Yoga class schedule.")
    refitted = learning.load(seeded_library)
    assert refitted is not None and not refitted.incremental and "health" in refitted.folders


def test_abstains_rather_than_forcing_the_majority_folder(library: Library) -> None:
    for n in range(30):
        write(library.root_path, f"work/reports/r{n}.txt", f"Quarterly sales report {n}: revenue, pipeline, targets.")
    for n in range(3):
        write(library.root_path, f"personal/p{n}.txt", f"Birthday party invitation {n} for the family.")
    actions.scan_library(library=library)
    suggestion = _upload(library, "scan-0001.txt", "zxqv wplk")
    assert suggestion.target_folder == ""
    assert "No confident folder" in suggestion.reasoning
    assert {a["folder"] for a in suggestion.alternatives} == {"work/reports", "personal"}


def test_auto_move_waits_for_calibration_then_moves_undoably(seeded_library: Library) -> None:
    """12 filed files: the confidence is not calibrated on the owner's filing yet, so however high it is the
    file stays a pending suggestion (issue 32, item 8). From MIN_CALIBRATION_SAMPLES filed files on it moves."""
    from apps.organization.filing_combiner import MIN_CALIBRATION_SAMPLES

    actions.update_settings(owner=seeded_library.owner, changes={"auto_move": True, "auto_move_threshold": 0.5})
    early = _upload(seeded_library, "may.txt", "QNB Bank account statement May: IBAN, closing balance.")
    early.refresh_from_db()
    assert early.target_folder == "finance/bank" and early.confidence >= 0.5, early.reasoning
    assert "not yet on yours" in early.reasoning
    assert early.status == SuggestionStatus.PENDING and not Move.objects.filter(suggestion=early).exists()
    assert (seeded_library.root_path / "inbox/may.txt").is_file()

    filed = len(SEED_FILES)
    for n in range(MIN_CALIBRATION_SAMPLES - filed):
        folder, text = [
            ("finance/bank", f"QNB Bank statement {n}: account balance, IBAN, transfers."),
            ("travel", f"SkyBridge Airlines boarding pass {n}: flight, seat, gate."),
            ("school", f"School newsletter {n}: class, teacher, homework, term."),
        ][n % 3]
        write(seeded_library.root_path, f"{folder}/more-{n}.txt", text)
    actions.scan_library(library=seeded_library)
    suggestion = _upload(seeded_library, "june.txt", "QNB Bank account statement June: IBAN, closing balance.")
    suggestion.refresh_from_db()
    assert suggestion.status == SuggestionStatus.ACCEPTED and suggestion.action == "auto", suggestion.reasoning
    move = Move.objects.get(suggestion=suggestion)
    assert move.reason.startswith("auto-move") and move.to_path == "finance/bank/june.txt"
    undo_move(move=move)
    assert (seeded_library.root_path / "inbox/june.txt").is_file()
    suggestion.file.refresh_from_db()
    assert suggestion.file.status == FileStatus.INBOX


def test_repeated_rejections_of_a_folder_for_one_kind_of_file_stop_suggesting_it(seeded_library: Library) -> None:
    """Rejections are learned: each rejected newsletter lowers finance/bank for the next similar one until the
    system abstains or ranks another folder first; a different kind of file still goes to finance/bank."""
    texts = [
        f"QNB Bank newsletter {n}: account offers, credit card campaign, win a holiday, unsubscribe here."
        for n in range(6)
    ]
    first = _upload(seeded_library, "newsletter-0.txt", texts[0])
    assert first.target_folder == "finance/bank", first.reasoning
    confidences = [first.confidence]
    suggestion = first
    for n in range(1, 6):
        respond(suggestion=suggestion, action="reject")
        suggestion = _upload(seeded_library, f"newsletter-{n}.txt", texts[n])
        if suggestion.target_folder != "finance/bank":
            break
        confidences.append(suggestion.confidence)
    else:
        raise AssertionError(f"finance/bank was suggested after 5 rejections: {confidences}")
    assert confidences == sorted(confidences, reverse=True), confidences
    assert "rejected similar files there: finance/bank" in suggestion.reasoning
    # The rejected files stay in the inbox and are not suggested again unless forced.
    assert Suggestion.objects.filter(status=SuggestionStatus.REJECTED).count() == len(confidences)
    statement = _upload(seeded_library, "statement-april.txt", "QNB Bank account statement April: IBAN, balance.")
    assert statement.target_folder == "finance/bank", statement.reasoning


def test_filed_files_are_embedded_once_and_kept_until_their_text_changes(seeded_library: Library) -> None:
    """The embeddings of filed files live in organization's table: a training or a suggestion reads them
    instead of re-embedding the library; a file whose digest changed is embedded again."""
    from apps.organization import learning
    from apps.organization.models import FileEmbedding, LibraryFile

    filed = list(LibraryFile.objects.filter(library=seeded_library, status=FileStatus.FILED))
    assert FileEmbedding.objects.filter(file__in=filed).count() == len(filed) == len(SEED_FILES)
    classifier = learning.load(seeded_library)
    assert classifier is not None and classifier.embedded.all()
    pairs = [(file.pk, learning.sample_for(file, folder=file.folder)) for file in filed]
    assert learning.attach_embeddings(pairs) == 0  # all stored
    assert all(sample.embedding is not None for _, sample in pairs)
    changed = filed[0]
    changed.digest_text += " A second page was added."
    changed.save(update_fields=["digest_text"])
    again = [(file.pk, learning.sample_for(file, folder=file.folder)) for file in filed]
    assert learning.attach_embeddings(again) == 1
    assert FileEmbedding.objects.filter(file__in=filed).count() == len(filed)
    # A suggestion embeds the inbox file once; the next suggestion for it reads the stored vector.
    suggestion = _upload(seeded_library, "visa.txt", "Visa application appointment at the consulate.")
    assert FileEmbedding.objects.filter(file=suggestion.file).exists()
    again_inbox = [(suggestion.file.pk, learning.sample_for(suggestion.file))]
    assert learning.attach_embeddings(again_inbox) == 0
