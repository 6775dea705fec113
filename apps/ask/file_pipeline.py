"""The steps of the library requests of an Ask conversation (one conversation over mail and files):

query_files:      classify → search_files → answer   (file cards; "not that one, …" narrows the last search)
confirm / reject: classify → decide → answer         (the folder suggestion the conversation last showed)
organize:         classify → organize → answer       (the organization scan; suggestions to accept or reject)
save:             classify → save_file → answer      (a note or a link written into the library inbox)

Every answer says what was found or done; a move is only ever the owner's "yes", and says where it went."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from django.urls import reverse

from apps.ask.file_actions import LibraryRequestError, decide_suggestions, organize_inbox, save_to_library
from apps.ask.intent import Route
from apps.ask.library import (
    ConversationFiles,
    FileSearch,
    file_card,
    pending_for_decision,
    pick_by_name,
    search_files,
    suggestion_row,
)
from apps.ask.steps import AskContext, AskOutcome, StepTracker, make_outcome
from apps.organization.library import get_library
from apps.organization.models import Suggestion

KIND_LABELS = {"image": "photo or image", "pdf": "PDF", "docx": "Word document"}


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _folder_label(folder: str) -> str:
    if not folder:
        return "the library root"
    if folder == "inbox" or folder.startswith("inbox/"):
        return "the library inbox (not filed yet)"
    return folder


def empty_library_text(owner: Any) -> str:
    library = get_library(owner=owner)
    return (
        "Your library has no files yet. Add some with Upload on the Organization page "
        f"({reverse('organization:page')}), or put them into your library's inbox folder ({library.inbox_path}/): "
        "new files there are picked up automatically."
    )


def run_file_request(
    ctx: AskContext, tracker: StepTracker, started: float, route: Route, files: ConversationFiles, scope: dict
) -> AskOutcome:
    scope["router"] = route.as_json() | {k: v for k, v in scope.get("router", {}).items() if k == "llm_error"}
    if route.intent == "query_files":
        return _query_files(ctx, tracker, started, route, files, scope)
    if route.intent in ("confirm", "reject", "choose"):
        return _decide(ctx, tracker, started, route, files, scope)
    if route.intent == "organize":
        return _organize(ctx, tracker, started, route, scope)
    return _save(ctx, tracker, started, route, scope)


def _pending_of(cards: list[dict[str, Any]]) -> list[Suggestion]:
    ids = [card["file_id"] for card in cards if card["in_inbox"]]
    if not ids:
        return []
    return list(Suggestion.objects.filter(file_id__in=ids, status="pending").select_related("file"))


def _query_answer(found: FileSearch, route: Route, ctx: AskContext, left_out: list[str]) -> str:
    if not found.library_files:
        return empty_library_text(ctx.owner)
    what = f"“{found.query}”" if found.query else "your request"
    kind = KIND_LABELS.get(found.kind, "")
    kind_note = f" ({kind} files only)" if kind else ""
    left = f" Left out: {', '.join(left_out)} (you said not that one)." if left_out else ""
    if found.error:
        return f"I could not search your library: {found.error}"
    if not found.cards:
        hint = "other words — a name, or a word from inside the document"
        if kind:
            hint += f", or leave out “{kind}”"
        return (
            f"No file in your library matches {what}{kind_note}.{left} Try {hint}. Mail attachments are not library "
            "files: ask about your mail to search them."
        )
    best = found.cards[0]
    if not found.query:
        lead = f"The newest {_plural(found.count, 'file')} in your library{kind_note}"
    else:
        count = f"{found.count} files in the library match" if found.count != 1 else "1 file in the library matches"
        lead = f"{count} {what}{kind_note}"
    return f"{lead}. The best match is {best['name']} in {_folder_label(best['folder'])}.{left}"


def _query_files(
    ctx: AskContext, tracker: StepTracker, started: float, route: Route, files: ConversationFiles, scope: dict
) -> AskOutcome:
    query, kind, excluded = route.query, route.kind, []
    previous = files.previous
    if route.narrow and previous is not None:
        # The new words first, then the previous search's: "not that one, the driver's license".
        query = " ".join(dict.fromkeys(f"{route.query} {previous.query}".split()))
        kind = route.kind or previous.kind
        excluded = list(previous.excluded)
        if route.exclude_previous and previous.top and previous.top not in excluded:
            excluded.append(previous.top)
    with tracker.step("search_files") as step:
        found = search_files(owner=ctx.owner, query=query, kind=kind, excluded=excluded)
        step.detail = (
            f"{_plural(found.count, 'matching file')}, {len(found.cards)} shown"
            if found.library_files
            else "the library has no files"
        ) + (f"; left out {_plural(len(excluded), 'file')} you said no to" if excluded else "")
    left_out = []
    if excluded:
        from apps.organization.models import LibraryFile

        left_out = list(LibraryFile.objects.filter(pk__in=excluded).values_list("path", flat=True))
        left_out = [path.rsplit("/", 1)[-1] for path in left_out]
    suggestions = _pending_of(found.cards)
    with tracker.step("answer") as step:
        answer = _query_answer(found, route, ctx, left_out)
        step.detail = _plural(len(found.cards), "file card") if found.cards else "no file matched"
    scope["files"] = found.cards
    scope["suggestions"] = [suggestion_row(s) for s in suggestions]
    top = found.cards[0]["file_id"] if found.cards else None
    plan = {
        "intent": "query_files",
        "route": route.as_json(),
        "files": {
            "query": query,
            "kind": kind,
            "excluded": excluded,
            "top": top,
            "shown": [c["file_id"] for c in found.cards],
        },
    }
    return make_outcome(tracker, started, "query_files", answer, "files", plan, [], scope)


def _decide(
    ctx: AskContext, tracker: StepTracker, started: float, route: Route, files: ConversationFiles, scope: dict
) -> AskOutcome:
    accept = route.intent in ("confirm", "choose")
    moved: list[dict[str, Any]] = []
    with tracker.step("decide") as step:
        candidates = pending_for_decision(owner=ctx.owner, shown=files.shown_suggestions)
        named_words = [w for w in route.names if w != "all"]
        chosen = pick_by_name(candidates, named_words)
        lines: list[str] = []
        shown: list[Suggestion] = []
        if not candidates:
            step.detail = "no pending suggestion"
            lines.append(
                "Nothing is waiting for a yes or no: no folder suggestion is pending. Say “organize my inbox "
                "files” to get suggestions for the files in your library inbox."
            )
        elif named_words and not chosen:
            step.detail = "no pending suggestion for the file named"
            shown = candidates
            lines.append(
                f"No pending suggestion is for a file named “{' '.join(named_words)}”. Pending: "
                + ", ".join(s.file.name for s in candidates[:6])
                + ". Name one of them, or use Accept / Reject below."
            )
        elif len(chosen) > 1 and "all" not in route.names:
            step.detail = f"{len(chosen)} pending suggestions: asked which one"
            shown = chosen
            lines.append(
                f"{len(chosen)} suggestions are pending — which one? Accept or reject it below, or name the file "
                f"(“yes, move {chosen[0].file.name}”), or say “yes, move them all”."
            )
        elif not files.shown_suggestions and not named_words:
            # A "yes" to a suggestion this conversation never showed is not an informed yes: show it first.
            step.detail = "the suggestion was not shown in this conversation: shown, nothing decided"
            shown = chosen
            verb = "moved" if accept else "changed"
            again_all = f"move them all to {route.folder}" if route.folder else "yes, move them all"
            again_one = f"move it to {route.folder}" if route.folder else "yes, move it"
            if len(chosen) > 1:
                lines.append(
                    f"{len(chosen)} suggestions are waiting, shown below. Nothing was {verb} yet — say "
                    f"“{again_all if accept else 'no to all'}” again, or use the buttons."
                )
            else:
                what = chosen[0]
                target = f"move it to {what.target_folder} ({what.confidence:.0%})" if what.target_folder else "file it"
                lines.append(
                    f"{what.file.name} is waiting in your library inbox: {target}? Nothing was {verb} yet — "
                    f"say “{again_one if accept else 'no'}” again, or use the buttons below."
                )
        else:
            results = decide_suggestions(suggestions=chosen, accept=accept, folder=route.folder)
            shown = [r.suggestion for r in results]
            done = [r for r in results if not r.error]
            step.detail = f"{'moved' if accept else 'kept in the inbox'}: {len(done)}"
            if len(done) != len(results):
                step.detail += f"; failed: {len(results) - len(done)}"
            for result in results:
                name = result.suggestion.file.name
                if result.error:
                    lines.append(f"Could not {'move' if accept else 'reject'} {name}: {result.error} Nothing moved.")
                elif accept and result.move is not None:
                    move = result.move
                    lines.append(
                        f"Moved {name} from {PurePosixPath(move.from_path).parent}/ to "
                        f"{result.suggestion.final_folder}/ (now {move.to_path})."
                    )
                    moved.append({"move_id": move.pk, "from": move.from_path, "to": move.to_path})
                else:
                    target = result.suggestion.target_folder
                    lines.append(
                        f"Kept {name} in the inbox"
                        + (f" instead of moving it to {target}" if target else "")
                        + ": the suggestion is rejected and is not made again unless you ask for a fresh one."
                    )
            if moved:
                lines.append("You can undo a move on the Organization page (History → Undo).")
    with tracker.step("answer") as step:
        answer = "\n".join(lines)
        step.detail = f"{len(moved)} moved" if accept else "nothing moved"
    if shown:
        fresh = Suggestion.objects.filter(pk__in=[s.pk for s in shown]).select_related("file").in_bulk()
        scope["suggestions"] = [suggestion_row(fresh.get(s.pk, s)) for s in shown]
    scope["moves"] = moved
    plan = {"intent": route.intent, "route": route.as_json()}
    return make_outcome(tracker, started, route.intent, answer, "action", plan, [], scope)


def _suggestion_line(suggestion: Suggestion) -> str:
    if suggestion.target_folder:
        return f"• {suggestion.file.name} → {suggestion.target_folder} ({suggestion.confidence:.0%})"
    best = (suggestion.alternatives or [{}])[0]
    guess = f" (best guess {best['folder']}, {best['confidence']:.0%})" if best.get("folder") else ""
    return f"• {suggestion.file.name}: no confident folder{guess}"


def _organize(ctx: AskContext, tracker: StepTracker, started: float, route: Route, scope: dict) -> AskOutcome:
    with tracker.step("organize") as step:
        result = organize_inbox(owner=ctx.owner)
        step.detail = (
            f"{_plural(result.new_files, 'new file')}, {_plural(result.inbox_files, 'inbox file')}, "
            f"{_plural(len(result.suggestions), 'suggestion')}"
        )
    with tracker.step("answer") as step:
        lines = []
        library = get_library(owner=ctx.owner)
        if not result.inbox_files and not library.files.exclude(status="missing").exists():
            lines.append(empty_library_text(ctx.owner))
        elif not result.inbox_files:
            new = _plural(result.new_files, "new file")
            found = f" The scan found {new} in your folders." if result.new_files else ""
            lines.append("Your library inbox is empty — nothing to organize." + found)
        else:
            lines.append(
                f"Scanned your library: {_plural(result.new_files, 'new file')}; "
                f"{_plural(result.inbox_files, 'file')} in the inbox."
            )
            if result.suggestions:
                lines.append("Suggestions:")
                lines.extend(_suggestion_line(s) for s in result.suggestions)
                lines.append(
                    "Nothing was moved: accept or reject each below, or say “yes, move it” (“yes, move them all”)."
                )
            if result.skipped_rejected:
                lines.append(
                    f"{_plural(result.skipped_rejected, 'file')} not suggested again: you rejected a suggestion "
                    "for them before."
                )
        if result.errors:
            lines.append("Could not read: " + "; ".join(result.errors[:3]))
        answer = "\n".join(lines)
        step.detail = "nothing moved"
    scope["suggestions"] = [suggestion_row(s) for s in result.suggestions]
    plan = {"intent": "organize", "route": route.as_json()}
    return make_outcome(tracker, started, "organize", answer, "action", plan, [], scope)


def _save(ctx: AskContext, tracker: StepTracker, started: float, route: Route, scope: dict) -> AskOutcome:
    saved = None
    error = ""
    with tracker.step("save_file") as step:
        try:
            saved = save_to_library(owner=ctx.owner, content=route.content, now=ctx.now)
            step.detail = f"saved as {saved.file.path}"
        except LibraryRequestError as exc:
            error = str(exc)
            step.status = "skipped"
            step.detail = f"not saved: {error}"
    with tracker.step("answer") as step:
        if saved is None:
            answer = f"Nothing was saved: {error}"
        else:
            what = "the link" if saved.is_link else "your note"
            answer = f"Saved {what} as {saved.file.path} in your library inbox" + (
                " (the page itself was not downloaded)." if saved.is_link else "."
            )
            suggestion = saved.suggestion
            if suggestion is None:
                answer += " Say “organize my inbox files” to get a folder suggestion for it."
            elif suggestion.target_folder:
                answer += (
                    f"\nSuggested folder: {suggestion.target_folder} ({suggestion.confidence:.0%}). Say “yes, move "
                    "it” to file it there, or “no” to keep it in the inbox."
                )
            else:
                answer += f"\nNo confident folder for it yet: {suggestion.reasoning}"
        step.detail = "saved" if saved else "not saved"
    if saved is not None:
        scope["files"] = [file_card(saved.file)]
        scope["suggestions"] = [suggestion_row(saved.suggestion)] if saved.suggestion else []
    plan = {"intent": "save", "route": route.as_json()}
    return make_outcome(tracker, started, "save", answer, "action", plan, [], scope)
