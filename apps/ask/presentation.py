"""What the run templates need, shared by the pages and the websocket consumer (which renders the same
partials for live updates)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.urls import NoReverseMatch, reverse

from apps.ask.models import AskRun, Intent, RunStatus
from apps.ask.proposals import CHANGE_LABELS
from apps.ask.selectors import drafts_for_run
from apps.ask.steps import STEPS

THREAD_URL_NAME = "mail:thread"
SOURCE_LABELS = {
    "local_fts": "words",
    "local_vector": "meaning",
    "provider_search": "provider",
    "attachment_text": "attachment",
}


def thread_url(row: dict[str, Any]) -> str | None:
    if not row.get("thread_id"):
        return None
    try:
        url = reverse(THREAD_URL_NAME, args=[row["thread_id"]])
    except NoReverseMatch:
        return None
    return f"{url}#message-{row['message_pk']}" if row.get("message_pk") else url


def step_rows(run: AskRun) -> list[dict[str, Any]]:
    """Every possible step in order; the ones this run has not reached are hidden placeholders, so a
    live event only ever replaces a row (replaying an event twice changes nothing)."""
    known = {step["stepId"]: step for step in run.steps or []}
    rows = []
    for step_id, label in STEPS:
        step = known.get(step_id)
        if step is not None and run.is_finished and step.get("status") in ("running", "pending"):
            # Started but never finished: say so instead of "…" forever.
            why = "the run failed before this step finished" if run.status == RunStatus.ERROR else "not finished"
            step = {**step, "status": "skipped", "detail": step.get("detail") or why}
        rows.append(
            {
                "stepId": step_id,
                "label": step["label"] if step else label,
                "detail": step.get("detail", "") if step else "",
                "status": step.get("status", "running") if step else "pending",
                "ms": step.get("ms") if step else None,
                "hidden": step is None,
            }
        )
    return rows


def evidence_rows(run: AskRun) -> list[dict[str, Any]]:
    rows = []
    for row in run.evidence or []:
        date = dt.datetime.fromisoformat(row["date"]) if row.get("date") else None
        rows.append(
            {
                **row,
                "url": thread_url(row),
                "date_value": date,
                "source_labels": [(s, SOURCE_LABELS.get(s, s)) for s in row.get("sources", [])],
            }
        )
    return rows


CONFIDENCE_LABELS = {
    "high": "Confidence: high",
    "medium": "Confidence: medium",
    "low": "Confidence: low — I'm not sure this answers it",
}


KIND_NAMES = {"date": "a date", "time": "a time", "amount": "an amount", "identifier": "a reference number"}


def verification_label(scope: dict[str, Any], plan: dict[str, Any] | None = None) -> str:
    """What the check actually verified: "2 values found in [1]" (dates, times, amounts and reference
    numbers of the answer looked up in the mail it cites), or which ones were not found — and when the
    question asked for a kind of value and none of the values found is of that kind, it says so (issue 35,
    item 4: a count of found values must not read as a checked answer)."""
    check = scope.get("citation_check") or {}
    checked = int(check.get("checked_values") or 0)
    if not checked:
        return ""
    found = int(check.get("found_values", checked - len(check.get("unsupported") or [])))
    cited = ", ".join(f"[{n}]" for n in check.get("cited") or []) or "the evidence"
    label = f"{found} value{'s' if found != 1 else ''} found in {cited}"
    asked = [k for k in (plan or {}).get("answer_types") or [] if k in KIND_NAMES]
    if found and asked and "found_kinds" in check and not set(asked) & set(check["found_kinds"]):
        label += f", but none is {' or '.join(KIND_NAMES[k] for k in asked)} as the question asks"
    missing = check.get("unsupported") or []
    if missing:
        label += f"; not found: {', '.join(missing)}"
    return label


def _folder_label(folder: str) -> str:
    if not folder:
        return "the library root"
    if folder == "inbox" or folder.startswith("inbox/"):
        return "the library inbox"
    return folder


def file_cards(run: AskRun) -> list[dict[str, Any]]:
    """The library files a run found or saved (stored with the run), with their links."""
    cards = []
    for card in (run.scope or {}).get("files") or []:
        cards.append(
            {
                **card,
                "url": reverse("ask:file", args=[card["file_id"]]),
                "thumbnail_url": reverse("search:file_thumbnail", args=[card["file_id"]]),
                "folder_label": _folder_label(str(card.get("folder") or "")),
            }
        )
    return cards


STATUS_LABELS = {
    "accepted": "Moved",
    "rejected": "Kept in the inbox",
    "expired": "No longer pending",
}


def suggestion_cards(run: AskRun) -> list[dict[str, Any]]:
    """The folder suggestions a run showed, with their status now (decided since, by a button or a "yes")."""
    from apps.ask.library import current_suggestions

    rows = (run.scope or {}).get("suggestions") or []
    current = current_suggestions([int(row["suggestion_id"]) for row in rows], owner=run.owner_id)
    cards = []
    for row in rows:
        now = current.get(int(row["suggestion_id"]))
        if now is None:
            continue
        status = now.status
        label = STATUS_LABELS.get(status, "")
        if status == "accepted":
            label = f"Moved to {now.final_folder}"
        elif status == "expired" and now.expired_reason:
            label = f"No longer pending: {now.expired_reason}"
        cards.append(
            {
                **row,
                "status": status,
                "status_label": label,
                "confidence_label": f"{float(row.get('confidence') or 0):.0%}",
                "respond_url": reverse("api:respond_to_suggestion", args=[row["suggestion_id"]]),
            }
        )
    return cards


def confidence_label(scope: dict[str, Any]) -> str:
    """The level, and for an extractive answer the confidence model's estimate (apps/ask/confidence.py)."""
    label = CONFIDENCE_LABELS.get(str(scope.get("confidence") or ""), "")
    extractive = scope.get("extractive") or {}
    chance = extractive.get("chance")
    if label and chance is not None and not extractive.get("kinds_missing"):
        label += f" (estimated {float(chance):.0%} chance that [{extractive.get('cited')}] is the mail that answers)"
    return label


MODE_LABELS = {
    "no_evidence": "No reliable evidence",
    "drafts": "Drafts are saved for review; nothing was sent",
    "refusal": "Nothing was changed",
    "files": "From your library files",
    "action": "Done in your library on your request",
}


def answerer_label(run: AskRun) -> str:
    """Who wrote the answer's text, and for a quoted answer with a model configured, why the model's own
    answer is not the one shown (issue 35, item 4)."""
    scope = run.scope or {}
    llm = scope.get("llm") or {}
    model = str(llm.get("model") or "")
    if run.answer_mode == "llm":
        return f"Written by the language model{f' {model}' if model else ''} from the evidence"
    if run.answer_mode == "chat":
        by_model = (scope.get("router") or {}).get("source") == "llm"
        return "A short reply; nothing was searched" + (" (written by the language model)" if by_model else "")
    if run.answer_mode == "extractive":
        if not llm:
            return "Quoted from the evidence (no language model configured)"
        if llm.get("error"):
            return f"Quoted from the evidence: the language model failed ({str(llm['error'])[:160]})"
        rejected = llm.get("rejected") or []
        if rejected:
            unsupported = (rejected[-1].get("check") or {}).get("unsupported") or []
            why = (
                f"values not in the mail it cited: {', '.join(map(str, unsupported[:4]))}"
                if unsupported
                else "it cited no evidence"
            )
            return f"Quoted from the evidence: the language model's answer was discarded ({why})"
        return "Quoted from the evidence"
    proposal = scope.get("proposal") or {}
    if run.answer_mode == "refusal" and proposal.get("status") == "done":
        return f"Changed on your click: {proposal.get('summary', '')}"
    return MODE_LABELS.get(run.answer_mode, "")


def proposal_context(run: AskRun) -> dict[str, Any] | None:
    """The mail change an answer offers (apps/ask/proposals.py): the conversations with their dates, the
    buttons, and once made, what happened to each."""
    proposal = (run.scope or {}).get("proposal")
    if not proposal:
        return None
    results = {int(r["thread_id"]): r for r in proposal.get("results") or []}
    threads = []
    for item in proposal.get("threads") or []:
        date = dt.datetime.fromisoformat(item["date"]) if item.get("date") else None
        result = results.get(int(item["thread_id"]))
        threads.append(
            {
                **item,
                "date": date,
                "url": reverse("mail:thread", args=[item["thread_id"]]),
                "result": result,
            }
        )
    return {
        **proposal,
        "threads": threads,
        "buttons": [(change, CHANGE_LABELS[change]) for change in proposal.get("changes") or []],
        "url": reverse("ask:run_proposal", args=[run.pk]),
        "pending": proposal.get("status") == "pending",
    }


def run_context(run: AskRun) -> dict[str, Any]:
    return {
        "run": run,
        "live": not run.is_finished,
        "steps": step_rows(run),
        "evidence": evidence_rows(run),
        "drafts": drafts_for_run(run=run) if run.intent == Intent.FOLLOW_UP_DRAFTS else [],
        "is_error": run.status == RunStatus.ERROR,
        "provider_errors": (run.scope or {}).get("provider_errors") or [],
        "citation_check": (run.scope or {}).get("citation_check") or {},
        "verification": verification_label(run.scope or {}, run.plan or {}),
        "answerer": answerer_label(run),
        "proposal": proposal_context(run),
        "confidence": confidence_label(run.scope or {}),
        "confidence_level": str((run.scope or {}).get("confidence") or ""),
        "files": file_cards(run),
        "suggestions": suggestion_cards(run),
    }
