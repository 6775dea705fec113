"""Mail changes Ask proposes and only the user carries out (issue 33, item 5: write-back "from Ask's confirmed
actions"; issue 35, item 2: instructions in any language).

Ask never changes mail by itself. When a request asks to delete, archive, move, flag or mark mail and names a
sender ("Lösche alle Mails von ParcelPoint"), the run lists that sender's conversations — found with the
search box's own `from:` operator, within the dates the request names — and offers the change as buttons.
Only the owner's click (a POST with the run's id, the change and the ticked conversations) makes it, through
the mailbox's write-back (apps.accounts: the same ledger, server write, retries and undo as a click in the
mailbox). A request that names no sender gets no list: the refusal says to select the mail in the mailbox."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from django.http import Http404

from apps.accounts import actions as account_actions
from apps.accounts import selectors as account_selectors
from apps.accounts.writeback import MailActionRefused
from apps.ask.dates import parse_date_range
from apps.ask.intent_model import GENERIC_ACTION, likely_actions
from apps.ask.planner import extract_entities
from apps.search.selectors import search_page

logger = logging.getLogger(__name__)

# The refused action → the changes offered for it (the user picks one: "mark" may mean read or unread).
OFFERED: dict[str, tuple[str, ...]] = {
    "delete mail": ("trash",),
    "archive mail": ("archive",),
    # The destination is chosen from the account's own folders beside the button, not read from the request's
    # words: "in den Ordner Rechnungen", "to Receipts" and "dans Factures" need no language rules that way.
    "move mail": ("move",),
    "change flags": ("flag", "unflag"),
    "change read/done marks": ("read", "unread"),
}
CHANGE_LABELS = {
    "trash": "Move to Trash",
    "archive": "Archive",
    "move": "Move",
    "flag": "Flag",
    "unflag": "Unflag",
    "read": "Mark read",
    "unread": "Mark unread",
}
DONE_LABELS = {
    "trash": "moved to Trash",
    "archive": "archived",
    "move": "moved",
    "flag": "flagged",
    "unflag": "unflagged",
    "read": "marked read",
    "unread": "marked unread",
}
MAX_THREADS = 50
MAX_SENDERS = 4


class ProposalError(ValueError):
    """The change cannot be made as asked (already done, not offered, nothing ticked)."""


def _date_operators(question: str, now: dt.datetime) -> str:
    found = parse_date_range(question, now)
    parts = []
    if found.start is not None:
        parts.append(f"after:{found.start.date().isoformat()}")
    if found.end is not None:
        parts.append(f"before:{found.end.date().isoformat()}")
    return " ".join(parts)


def propose(*, owner: Any, question: str, action: str, now: dt.datetime) -> dict[str, Any] | None:
    """The conversations the request points at, and the changes offered; None when it names no sender
    whose mail the owner has (or the action is not one Ask can offer)."""
    if action == GENERIC_ACTION:  # the examples could not tell two actions apart: offer the changes of both
        changes: tuple[str, ...] | None = tuple(
            dict.fromkeys(change for candidate in likely_actions(question) for change in OFFERED.get(candidate, ()))
        )
    else:
        changes = OFFERED.get(action)
    if not changes or owner is None:
        return None
    label = parse_date_range(question, now).label
    entities, senders = extract_entities(question, skip=label)
    dates = _date_operators(question, now)
    threads: dict[int, dict[str, Any]] = {}
    queries: list[str] = []
    for name in list(dict.fromkeys([*senders, *entities]))[:MAX_SENDERS]:
        query = " ".join(part for part in (f'from:"{name}"', dates) if part)
        try:
            page = search_page(query, user=owner, mode="keyword", per_page=MAX_THREADS)
        except ValueError as exc:
            logger.info("ask: no proposal for %r: %s", query, exc)
            continue
        rows = [row for row in page.rows if row.kind != "file" and row.thread_id is not None]
        if not rows:
            continue
        queries.append(query)
        for row in rows:
            threads.setdefault(
                int(row.thread_id),  # type: ignore[arg-type]
                {
                    "thread_id": row.thread_id,
                    "subject": row.title or "(no subject)",
                    "from": row.sender,
                    "date": row.date.isoformat() if row.date else None,
                    "folder": row.folder,
                    "account_id": row.account_id,
                },
            )
    if not threads:
        return None
    listed = list(threads.values())[:MAX_THREADS]
    proposal: dict[str, Any] = {
        "action": action,
        "changes": list(changes),
        "queries": queries,
        "threads": listed,
        "more": len(threads) > MAX_THREADS,
        "status": "pending",
    }
    if "move" in changes:
        proposal["targets"] = _move_targets(owner, [t["account_id"] for t in listed])
    return proposal


def _move_targets(owner: Any, account_ids: list[Any]) -> list[dict[str, Any]]:
    """Per account of the listed conversations, the folders they can be moved to (the mailbox's own list)."""
    targets = []
    for account_id in dict.fromkeys(pk for pk in account_ids if pk is not None):
        try:
            account = account_selectors.access_account(user=owner, account_id=int(account_id))
        except Http404:
            continue
        folders = [
            {"name": folder.name, "label": folder.display_name or folder.name}
            for folder in account_selectors.move_targets(account=account)
        ]
        targets.append({"account_id": account.pk, "account": account.name, "folders": folders})
    return targets


def proposal_answer(action: str, proposal: dict[str, Any]) -> str:
    count = len(proposal["threads"])
    what = "conversation matches" if count == 1 else "conversations match"
    offers = " or ".join(
        "a folder to move them to" if c == "move" else CHANGE_LABELS[c].lower() for c in proposal["changes"]
    )
    return (
        f"I can't {action} on my own. Nothing in your mailbox was changed: {count} {what} "
        f"{' or '.join(q for q in proposal['queries'])}: untick any you want to keep and choose {offers} "
        "under this answer in Ask; only your click there changes them, here and on the server."
    )


def carry_out(
    *,
    owner: Any,
    proposal: dict[str, Any],
    change: str,
    thread_ids: list[int],
    folders: dict[int, str] | None = None,
) -> dict[str, Any]:
    """Make the chosen change on the ticked conversations of a pending proposal; returns the proposal as
    done, with what happened per conversation. `folders` is the destination chosen per account for a move.
    Raises ProposalError when it cannot be made."""
    if proposal.get("status") != "pending":
        raise ProposalError("This change was already made; ask again to change more mail.")
    if change not in proposal.get("changes", []):
        raise ProposalError(f"{change!r} was not offered for this request.")
    offered = {int(item["thread_id"]) for item in proposal["threads"]}
    chosen = [pk for pk in dict.fromkeys(thread_ids) if pk in offered]
    if not chosen:
        raise ProposalError("No conversation was ticked: nothing was changed.")
    folders = folders or {}
    if change == "move" and not any(folders.values()):
        raise ProposalError("Choose the folder to move the conversations to: nothing was changed.")
    results: list[dict[str, Any]] = []
    for pk in chosen:
        try:
            thread = account_selectors.access_thread(user=owner, thread_id=pk)
        except Http404:
            results.append({"thread_id": pk, "ok": False, "detail": "no longer in your mailbox"})
            continue
        try:
            if change in ("read", "unread"):
                messages = [m for m in account_selectors.thread_messages(thread=thread) if m.deleted_at is None]
                changed = account_actions.set_messages_seen(
                    messages=messages, seen=change == "read", requested_by=owner
                )
            elif change == "move":
                folder = folders.get(int(thread.account_id), "")
                if folder not in {f.name for f in account_selectors.move_targets(account=thread.account)}:
                    why = f"no folder {folder!r} in its account" if folder else "no folder was chosen for its account"
                    results.append({"thread_id": pk, "ok": False, "detail": why})
                    continue
                changed = len(
                    account_actions.act_on_thread(thread=thread, kind="move", folder=folder, requested_by=owner)
                )
            else:
                changed = len(account_actions.act_on_thread(thread=thread, kind=change, requested_by=owner))
        except MailActionRefused as exc:
            results.append({"thread_id": pk, "ok": False, "detail": str(exc)})
            continue
        results.append({"thread_id": pk, "ok": True, "messages": changed})
    done = sum(1 for r in results if r["ok"])
    what = DONE_LABELS[change]
    if change == "move":
        chosen_folders = sorted({f for f in folders.values() if f})
        what += " to " + " and ".join(_folder_label(proposal, name) for name in chosen_folders)
    return {
        **proposal,
        "status": "done",
        "change": change,
        "results": results,
        "summary": f"{done} of {len(chosen)} conversation{'s' if len(chosen) != 1 else ''} {what}"
        + ("" if done == len(chosen) else "; see why below"),
    }


def _folder_label(proposal: dict[str, Any], name: str) -> str:
    for target in proposal.get("targets") or []:
        for folder in target["folders"]:
            if folder["name"] == name:
                return str(folder["label"])
    return name
