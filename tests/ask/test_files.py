"""One conversation over mail and library files: the request router, file queries (the asker's own files
only), follow-ups that narrow, yes / no to a folder suggestion, "organize my inbox files" and "save this
note". Every request goes through the Ask composer's real POST path (/ask/runs/, htmx), which executes the
run during the request under the test client (WSGI)."""

from __future__ import annotations

import io
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from PIL import Image

from apps.ask.intent import RouterContext, route_request
from apps.ask.models import AskRun
from apps.organization import actions as organization
from apps.organization.library import get_library
from apps.organization.models import FileStatus, Library, LibraryFile, Move, Suggestion, SuggestionStatus
from apps.organization.roots import library_base
from tests.conftest import USER_PASSWORD
from tests.fakes.openai_server import FakeOpenAI, Reply, system_text

pytestmark = pytest.mark.django_db

# A newcomer's library: a few filed folders to learn from (text), and photos of identity documents.
FILED: dict[str, str] = {
    "finance/bank/statement-2026-01.txt": "QNB Bank monthly account statement. IBAN TR12. Closing balance 4,210 TRY.",
    "finance/bank/statement-2026-02.txt": "QNB Bank account statement for February. Card payments, closing balance.",
    "finance/bank/statement-2026-03.txt": "Account statement QNB Bank March: transfers, IBAN, balance carried forward.",
    "travel/flight-ist-ber.txt": "Boarding pass SkyBridge Airlines flight IST to BER seat 14C gate B12 departure.",
    "travel/hotel-pera.txt": "Pera Garden Hotel reservation confirmation, check-in 3 nights, room booking.",
    "travel/rail-ticket.txt": "RailConnect train ticket Berlin to Hamburg, coach 7 seat 42, departure platform.",
}
PHOTOS = ("documents/identity/national-id-card.jpg", "documents/identity/driver-license.jpg")


def _write(root: Path, relative: str, content: str | None = None) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if content is None:
        Image.new("RGB", (48, 32), (200, 40, 40)).save(path, "JPEG")
    else:
        path.write_text(content, encoding="utf-8")
    return path


def _library(owner: Any, root: Path, capture: Callable[..., Any], *, inbox: dict[str, str] | None = None) -> Library:
    """The owner's library at `root`, scanned (digested, indexed, the classifier trained), and suggestions
    made for the inbox files by the organization app itself (like files that arrived before the question)."""
    root = library_base(owner.pk) / root.name  # library roots live under the owner's base (roots.py)
    organization.update_settings(owner=owner, changes={"root": str(root), "suggest_threshold": 0.5})
    library = get_library(owner=owner)
    for relative, text in FILED.items():
        _write(library.root_path, relative, text)
    for relative in PHOTOS:
        _write(library.root_path, relative)
    for relative, text in (inbox or {}).items():
        _write(library.root_path, relative, text)
    with capture(execute=True):  # indexing and retraining run on commit
        organization.scan_library(library=library, suggest=False)
    return library


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@dataclass
class Turn:
    """A finished run and the HTML the composer received for it."""

    run: AskRun
    html: str

    def __getattr__(self, name: str) -> Any:
        return getattr(self.run, name)


def _ask(client: Client, question: str, conversation: str = "") -> Turn:
    response = client.post("/ask/runs/", {"question": question, "conversation": conversation}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200, response.content[:500]
    run_id = re.search(r'data-run-id="([0-9a-f-]+)"', response.content.decode())
    assert run_id, response.content[:500]
    run = AskRun.objects.get(pk=run_id.group(1))
    assert run.status == "done", run.error
    return Turn(run=run, html=response.content.decode())


@pytest.fixture
def stranger(db: Any) -> Any:
    return get_user_model().objects.create_user(username="stranger", email="s@example.com", password=USER_PASSWORD)


@pytest.mark.parametrize(
    ("text", "context", "intent", "query", "kind"),
    [
        ("find my ID license photo", RouterContext(), "query_files", "ID license", "image"),
        ("show the PDF from QNB", RouterContext(), "query_files", "QNB", "pdf"),
        ("where is my tax return pdf?", RouterContext(), "query_files", "tax return", "pdf"),
        ("yes, move it", RouterContext(pending_suggestions=1), "confirm", "", ""),
        ("no, don't move it", RouterContext(pending_suggestions=1), "reject", "", ""),
        ("organize my inbox files", RouterContext(), "organize", "", ""),
        ("save this note: call the plumber", RouterContext(), "save", "", ""),
        ("https://example.org/docs", RouterContext(), "save", "", ""),
        ("not that one, the driver's license", RouterContext(last_file_query=True), "query_files", "driver license",
         ""),
        ("no, the driver's license", RouterContext(last_file_query=True, pending_suggestions=1), "query_files",
         "driver license", ""),
        # Mail stays mail: questions, refusals, a file verb about mail.
        ("when do I need to make a payment to QNB bank for my credit card", RouterContext(), "question", "", ""),
        ("who asked me to file the expense report?", RouterContext(), "question", "", ""),
        # A question about an event that names a kind of file: mail (and files too, when the library has some).
        ("when are the soccer team pictures being taken", RouterContext(), "question", "soccer team being taken",
         "image"),
        ("move all newsletters to archive", RouterContext(pending_suggestions=1), "unsupported", "", ""),
        ("find the mail from Tom about the budget", RouterContext(has_files=True), "question", "", ""),
        ("sort the mail from Tom", RouterContext(has_files=True), "question", "", ""),
        ("save the invoice from QNB", RouterContext(has_files=True), "question", "", ""),  # an attachment: not here
        ("note: buy milk", RouterContext(), "save", "", ""),
        ("no, move it to travel", RouterContext(pending_suggestions=1, folders=("finance/bank", "travel")), "choose",
         "", ""),
        ("move the newsletters to archive", RouterContext(pending_suggestions=1), "unsupported", "", ""),
        ("put it in travel", RouterContext(), "question", "", ""),  # nothing pending: not a decision
    ],
)  # fmt: skip
def test_router_rules(text: str, context: RouterContext, intent: str, query: str, kind: str) -> None:
    route = route_request(text, context)
    assert (route.intent, route.query, route.kind) == (intent, query, kind), route


def test_save_keeps_the_note_as_typed() -> None:
    route = route_request("Please save this note:\nbuy stamps\nand envelopes", RouterContext())
    assert route.intent == "save" and route.content == "buy stamps\nand envelopes"


def test_file_query_shows_only_the_askers_files_and_a_follow_up_narrows(
    user: Any, stranger: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    mine = _library(user, tmp_path / "mine", django_capture_on_commit_callbacks)
    theirs = _library(stranger, tmp_path / "theirs", django_capture_on_commit_callbacks)
    client = _client(user)

    run = _ask(client, "find my ID card photo")
    assert run.intent == "query_files" and run.answer_mode == "files"
    cards = run.scope["files"]
    own = set(LibraryFile.objects.filter(library=mine).values_list("pk", flat=True))
    assert cards and {c["file_id"] for c in cards} <= own  # the stranger's identical photos are not shown
    theirs_ids = set(LibraryFile.objects.filter(library=theirs).values_list("pk", flat=True))
    assert len(theirs_ids) == len(own) and not {c["file_id"] for c in cards} & theirs_ids
    assert cards[0]["name"] == "national-id-card.jpg" and cards[0]["folder"] == "documents/identity"
    assert all(c["kind"] == "image" for c in cards)  # "photo" asks for images
    assert "in the library match" in run.answer and "national-id-card.jpg in documents/identity" in run.answer
    assert 'data-testid="ask-file"' in run.html and "/search/files/" in run.html  # thumbnail
    link = f"/ask/files/{cards[0]['file_id']}/"
    assert link in run.html
    opened = client.get(link)
    assert opened.status_code == 200 and opened["Content-Type"] == "image/jpeg"
    assert opened.getvalue()[:2] == b"\xff\xd8"
    assert _client(stranger).get(link).status_code == 404

    follow = _ask(client, "not that one, the driver's license", str(run.conversation_id))
    assert follow.conversation_id == run.conversation_id and follow.intent == "query_files"
    names = [c["name"] for c in follow.scope["files"]]
    assert names and names[0] == "driver-license.jpg"
    assert "national-id-card.jpg" not in names  # the one the user said no to
    assert follow.plan["files"]["excluded"] == [cards[0]["file_id"]]
    assert "national-id-card.jpg (you said not that one)" in follow.answer

    nothing = _ask(client, "find my boarding pass photo", str(run.conversation_id))
    assert nothing.scope["files"] == [] and nothing.answer.startswith("No file in your library matches")

    photos = _ask(client, "show my photos")
    assert {c["name"] for c in photos.scope["files"]} == {"national-id-card.jpg", "driver-license.jpg"}
    assert photos.answer.startswith("The newest 2 files in your library (photo or image files only)")

    (mine.root_path / PHOTOS[0]).unlink()  # removed outside the app: the link says so (yours, but gone)
    gone = client.get(link)
    assert gone.status_code == 410 and b"no longer in your library folder" in gone.content


def test_an_empty_library_says_how_to_add_files(user: Any, tmp_path: Path) -> None:
    organization.update_settings(owner=user, changes={"root": str(library_base(user.pk) / "lib")})
    run = _ask(_client(user), "find my passport scan")
    assert run.intent == "query_files"
    assert "no files yet" in run.answer and "Organization page" in run.answer
    assert str(library_base(user.pk) / "lib" / "inbox") in run.answer


def test_organize_then_yes_moves_the_file_and_says_where(
    user: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    inbox = {"inbox/april.txt": "QNB Bank account statement April, IBAN and closing balance."}
    library = _library(user, tmp_path / "lib", django_capture_on_commit_callbacks, inbox=inbox)
    assert not Suggestion.objects.filter(file__library=library).exists()
    client = _client(user)

    organized = _ask(client, "organize my inbox files")
    assert organized.intent == "organize"
    suggestion = Suggestion.objects.get(file__library=library, status=SuggestionStatus.PENDING)
    assert suggestion.target_folder == "finance/bank", suggestion.reasoning
    assert "april.txt → finance/bank" in organized.answer and "Nothing was moved" in organized.answer
    assert (library.root_path / "inbox/april.txt").is_file()  # scanning never moves
    assert 'data-testid="ask-suggestion-accept"' in organized.html
    assert f"/api/inbox/suggestions/{suggestion.pk}/respond" in organized.html

    with django_capture_on_commit_callbacks(execute=True):
        moved = _ask(client, "yes, move it", str(organized.conversation_id))
    assert moved.intent == "confirm"
    assert (library.root_path / "finance/bank/april.txt").is_file()
    assert not (library.root_path / "inbox/april.txt").exists()
    move = Move.objects.get(suggestion=suggestion)
    assert (move.from_path, move.to_path) == ("inbox/april.txt", "finance/bank/april.txt")
    assert "Moved april.txt from inbox/ to finance/bank/ (now finance/bank/april.txt)" in moved.answer
    assert "undo" in moved.answer
    assert moved.scope["moves"] == [{"move_id": move.pk, "from": "inbox/april.txt", "to": "finance/bank/april.txt"}]
    assert 'data-status="accepted"' in moved.html and "Moved to finance/bank" in moved.html

    again = _ask(client, "yes", str(organized.conversation_id))
    assert "no folder suggestion is pending" in again.answer
    assert Move.objects.filter(library=library).count() == 1


def test_a_yes_to_a_suggestion_never_shown_here_shows_it_first(
    user: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    inbox = {"inbox/april.txt": "QNB Bank account statement April, IBAN and closing balance."}
    library = _library(user, tmp_path / "lib", django_capture_on_commit_callbacks, inbox=inbox)
    organization.scan_library(library=library)  # suggested on the Organize page's schedule, not in Ask
    client = _client(user)
    asked = _ask(client, "yes, move it")
    assert "april.txt is waiting in your library inbox: move it to finance/bank" in asked.answer
    assert (library.root_path / "inbox/april.txt").is_file() and not Move.objects.exists()
    moved = _ask(client, "yes, move it", str(asked.conversation_id))
    assert moved.answer.startswith("Moved april.txt from inbox/ to finance/bank/")
    assert (library.root_path / "finance/bank/april.txt").is_file()


@pytest.mark.parametrize(
    ("typed", "folder"),
    [("bank", "finance/bank"), ("Finance/Bank/", "finance/bank"), ("travel", "travel"), ("Taxes/2026", "Taxes/2026")],
)
def test_a_named_folder_is_the_librarys_own_or_a_new_one(typed: str, folder: str) -> None:
    context = RouterContext(pending_suggestions=1, folders=("finance", "finance/bank", "travel"))
    route = route_request(f"no, put it in {typed}", context)
    assert (route.intent, route.folder) == ("choose", folder), route


def test_move_it_to_another_folder_moves_it_there_and_a_bad_folder_moves_nothing(
    user: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    inbox = {"inbox/april.txt": "QNB Bank account statement April, IBAN and closing balance."}
    library = _library(user, tmp_path / "lib", django_capture_on_commit_callbacks, inbox=inbox)
    client = _client(user)
    organized = _ask(client, "organize my inbox files")
    suggestion = Suggestion.objects.get(file__library=library, status=SuggestionStatus.PENDING)
    assert suggestion.target_folder == "finance/bank"

    refused = _ask(client, "no, move it to ../outside", str(organized.conversation_id))
    assert refused.intent == "choose", refused.plan
    assert "Could not move april.txt" in refused.answer and "Nothing moved" in refused.answer
    assert not (tmp_path / "outside").exists() and (library.root_path / "inbox/april.txt").is_file()

    with django_capture_on_commit_callbacks(execute=True):
        moved = _ask(client, "no, put it in Taxes/2026 instead", str(organized.conversation_id))
    assert moved.intent == "choose", moved.plan
    assert "another folder for a folder suggestion" in moved.html  # the routing step says what it understood
    assert (library.root_path / "Taxes/2026/april.txt").is_file(), moved.answer
    suggestion.refresh_from_db()
    assert (suggestion.status, suggestion.action, suggestion.final_folder) == ("accepted", "choose", "Taxes/2026")
    assert "Moved april.txt from inbox/ to Taxes/2026/ (now Taxes/2026/april.txt)" in moved.answer


def test_no_keeps_the_file_and_an_ambiguous_yes_asks_which(
    user: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    inbox = {
        "inbox/april.txt": "QNB Bank account statement April, IBAN and closing balance.",
        "inbox/boarding-may.txt": "SkyBridge Airlines boarding pass, flight BER to IST, seat 3A, gate B4 departure.",
    }
    library = _library(user, tmp_path / "lib", django_capture_on_commit_callbacks, inbox=inbox)
    client = _client(user)
    organized = _ask(client, "organize my inbox files")
    assert Suggestion.objects.filter(file__library=library, status=SuggestionStatus.PENDING).count() == 2

    which = _ask(client, "yes, move it", str(organized.conversation_id))
    assert "2 suggestions are pending — which one?" in which.answer
    assert not Move.objects.filter(library=library).exists()
    assert which.html.count('data-testid="ask-suggestion"') == 2

    kept = _ask(client, "no, don't move the boarding one", str(organized.conversation_id))
    assert kept.intent == "reject", kept.plan
    boarding = Suggestion.objects.get(file__path="inbox/boarding-may.txt")
    assert boarding.status == SuggestionStatus.REJECTED
    assert (library.root_path / "inbox/boarding-may.txt").is_file()
    assert "Kept boarding-may.txt in the inbox" in kept.answer
    assert Suggestion.objects.get(file__path="inbox/april.txt").status == SuggestionStatus.PENDING
    assert not Move.objects.filter(library=library).exists()


def test_save_writes_a_note_and_a_link_into_the_inbox(user: Any, tmp_path: Path) -> None:
    organization.update_settings(owner=user, changes={"root": str(library_base(user.pk) / "lib")})
    client = _client(user)
    run = _ask(client, "save this note: call the plumber about the kitchen sink on Friday")
    assert run.intent == "save"
    saved = LibraryFile.objects.get(library__owner=user, status=FileStatus.INBOX)
    assert re.fullmatch(r"inbox/note-\d{4}-\d\d-\d\d-call-the-plumber-about-the-kitchen\.md", saved.path)
    on_disk = (library_base(user.pk) / "lib" / saved.path).read_text(encoding="utf-8")
    assert on_disk == "call the plumber about the kitchen sink on Friday\n"
    assert "kitchen sink" in saved.digest_text
    assert f"Saved your note as {saved.path} in your library inbox" in run.answer
    assert run.scope["files"][0]["file_id"] == saved.pk

    link = _ask(client, "save https://docs.example.org/setup/guide", str(run.conversation_id))
    path = LibraryFile.objects.get(library__owner=user, path__startswith="inbox/link-").path
    assert path == "inbox/link-docs-example-org-setup-guide.md"
    assert (library_base(user.pk) / "lib" / path).read_text(
        encoding="utf-8"
    ) == "<https://docs.example.org/setup/guide>\n"
    assert "(the page itself was not downloaded)" in link.answer

    empty = _ask(client, "save this note:")
    assert empty.intent != "save" or "Nothing was saved" in empty.answer


def test_a_mail_question_also_shows_files_with_its_words(
    user: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    _library(user, tmp_path / "lib", django_capture_on_commit_callbacks)
    run = _ask(_client(user), "what does the QNB statement say about transfers?")
    assert run.intent == "question"
    names = [c["name"] for c in run.scope["files"]]
    assert names and names[0] == "statement-2026-03.txt"
    assert "Files in your library with these words" in run.html
    assert "search_files" in [s["stepId"] for s in run.steps]
    # This user has no mail: the answer says so and points at the files.
    assert run.answer_mode == "no_evidence"
    assert "Your library has files with these words (below): statement-2026-03.txt" in run.answer


def test_an_unsure_request_is_routed_by_the_language_model(
    user: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any, fake_llm: FakeOpenAI
) -> None:
    _library(user, tmp_path / "lib", django_capture_on_commit_callbacks)
    routed = deque([Reply.text('{"intent": "find_files", "confidence": 0.9, "search_query": "driver license"}')])
    fake_llm.routes.insert(0, (lambda body: "You classify one message" in system_text(body), routed))
    run = _ask(_client(user), "find the thing I drive with")  # no file or mail noun: the rules are unsure
    assert run.intent == "query_files" and run.scope["router"]["source"] == "llm"
    assert run.scope["files"][0]["name"] == "driver-license.jpg"
    assert not routed


def test_the_ask_command_lists_files_and_suggestions(
    user: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    inbox = {"inbox/april.txt": "QNB Bank account statement April, IBAN and closing balance."}
    _library(user, tmp_path / "lib", django_capture_on_commit_callbacks, inbox=inbox)
    out = io.StringIO()
    call_command("ask", "find my ID card photo", "--user", user.email, stdout=out, stderr=io.StringIO())
    assert "Library files:\n  - documents/identity/national-id-card.jpg" in out.getvalue()
    out = io.StringIO()
    call_command("ask", "organize my inbox files", "--user", user.email, stdout=out, stderr=io.StringIO())
    suggestion = Suggestion.objects.get(file__path="inbox/april.txt")
    assert f"  {suggestion.pk}: inbox/april.txt → finance/bank (pending when shown)" in out.getvalue()
