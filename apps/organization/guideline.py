"""Guideline proposals learned from decisions: when every decision on files from one sender went to one
folder ("Files from billing@qnb.com.tr go to finance/bank: 12 of 12 decisions"), propose a line for
guideline.md. With an organization ApiConfig the model writes the line from the pattern, its counts and the
current guideline.md (its provider events are kept on the proposal); when it fails (timeout, provider error,
a reply that is not one line naming the folder) the pattern's own text is proposed and the reason is logged
and shown. The owner accepts (appended to the file) or discards it; either way it is not proposed again."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections import defaultdict
from typing import Any

from django.utils import timezone

from apps.llm.client import LLMError, ProviderEventData, chat
from apps.organization import actions, selectors
from apps.organization.agent import llm_config_for
from apps.organization.library import OrganizationError, get_settings
from apps.organization.models import GuidelineProposal, Library, Suggestion, SuggestionSource, SuggestionStatus

logger = logging.getLogger(__name__)
MIN_DECISIONS = 3
MAX_LINE = 300
MAX_GUIDELINE_CHARS = 8000

PROMPT = """You maintain guideline.md, the owner's own instructions for filing documents in their library \
(an organize agent reads it before suggesting folders). A pattern was learned from the owner's filing decisions. \
Write ONE line to add to guideline.md that states it as a filing rule: one plain sentence, at most 200 \
characters, naming the folder exactly as given. Reply with the line only: no bullet, no quotes, no explanation."""


@dataclasses.dataclass(slots=True)
class Pattern:
    sender: str
    folder: str
    decisions: int
    agreeing: int

    @property
    def stem(self) -> str:
        return f"Files from {self.sender} go to {self.folder}"

    @property
    def text(self) -> str:
        return f"{self.stem}: {self.agreeing} of {self.decisions} decisions."

    @property
    def evidence(self) -> dict[str, Any]:
        return {
            "pattern": f"sender {self.sender}",
            "folder": self.folder,
            "decisions": self.decisions,
            "agreeing": self.agreeing,
        }


def _sender(suggestion: Suggestion) -> str:
    file = suggestion.file
    return str((file.metadata or {}).get("sender") or (file.provenance or {}).get("sender") or "").lower()


def learned_patterns(*, library: Library) -> list[Pattern]:
    """Senders whose every decided file (at least MIN_DECISIONS) went to one folder."""
    decided = (
        Suggestion.objects.filter(file__library=library, status=SuggestionStatus.ACCEPTED)
        .exclude(final_folder="")
        .select_related("file")
    )
    by_sender: dict[str, list[str]] = defaultdict(list)
    for suggestion in decided:
        sender = _sender(suggestion)
        if sender:
            by_sender[sender].append(suggestion.final_folder)
    return [
        Pattern(sender=sender, folder=folders[0], decisions=len(folders), agreeing=len(folders))
        for sender, folders in sorted(by_sender.items())
        if len(folders) >= MIN_DECISIONS and len(set(folders)) == 1
    ]


def clean_line(reply: str | None, *, folder: str) -> str:
    """The model's reply as one guideline line, or ValueError saying what is wrong with it."""
    lines = [line.strip() for line in (reply or "").strip().strip("`").splitlines() if line.strip()]
    if len(lines) != 1:
        raise ValueError(f"the reply has {len(lines)} lines instead of one")
    line = lines[0].lstrip("-*• ").strip().strip('"“”').strip()
    if not line:
        raise ValueError("the reply is empty")
    if len(line) > MAX_LINE:
        raise ValueError(f"the reply is {len(line)} characters long (at most {MAX_LINE})")
    if folder.lower() not in line.lower():
        raise ValueError(f"the reply does not name the folder {folder}")
    return line


def llm_line(
    *, pattern: Pattern, others: list[Pattern], current: str, settings: Any
) -> tuple[str, list[dict[str, Any]], str]:
    """(line, provider events, failure reason): the line is "" when the model failed, with the reason."""
    events: list[dict[str, Any]] = []
    try:
        config = llm_config_for(settings)
    except LLMError as exc:  # its key cannot be decrypted: said like every other model failure
        return "", events, f"the model failed ({exc.category}: {exc})"
    if config is None:
        return "", events, ""

    def record(event: ProviderEventData) -> None:
        events.append(json.loads(json.dumps(dataclasses.asdict(event), default=str)))

    guideline = current[:MAX_GUIDELINE_CHARS] or "(empty: no guideline.md yet)"
    context = "\n".join(f"- {o.text}" for o in others if o is not pattern) or "- (none)"
    user = (
        f"Current guideline.md:\n<<<\n{guideline}\n>>>\n\n"
        f"Learned pattern: {pattern.agreeing} of {pattern.decisions} decided files from {pattern.sender} "
        f"went to the folder {pattern.folder}.\nOther learned patterns:\n{context}"
    )
    messages = [{"role": "system", "content": PROMPT}, {"role": "user", "content": user}]
    try:
        result = chat(config, messages, temperature=0, max_tokens=200, events=record)
        return clean_line(result.content, folder=pattern.folder), events, ""
    except LLMError as exc:
        return "", events, f"the model failed ({exc.category}: {exc})"
    except ValueError as exc:
        return "", events, f"the model's reply was not usable: {exc}"


def propose_from_decisions(*, library: Library) -> list[GuidelineProposal]:
    patterns = learned_patterns(library=library)
    proposed = {
        (e.get("pattern"), e.get("folder"))
        for evidence in GuidelineProposal.objects.filter(library=library).values_list("evidence", flat=True)
        for e in (evidence or [])
        if isinstance(e, dict)
    }
    known = set(GuidelineProposal.objects.filter(library=library).values_list("text", flat=True))
    current = selectors.read_guideline(library=library)
    settings = get_settings(owner=library.owner)
    made = []
    for pattern in patterns:
        evidence = pattern.evidence
        if (evidence["pattern"], pattern.folder) in proposed or pattern.stem in current:
            continue
        if pattern.text in known or any(k.startswith(pattern.stem) for k in known):
            continue
        text, source, reason = pattern.text, SuggestionSource.RULE, ""
        events: list[dict[str, Any]] = []
        if settings.api_config_id:
            line, events, reason = llm_line(pattern=pattern, others=patterns, current=current, settings=settings)
            if line:
                text, source = line, SuggestionSource.LLM
            else:
                logger.warning("organization: guideline line for %s not written by the model: %s", pattern.stem, reason)
                reason = f"The organize model could not write this line ({reason}); the learned pattern is shown."
        made.append(
            GuidelineProposal.objects.create(
                library=library,
                text=text,
                evidence=[evidence],
                source=source,
                provider_events=events,
                fallback_reason=reason[:500],
            )
        )
    return made


def decide_proposal(*, proposal: GuidelineProposal, accept: bool) -> GuidelineProposal:
    if proposal.status != "pending":
        raise OrganizationError(f"This proposal was already {proposal.status}.")
    if accept:
        library = proposal.library
        current = selectors.read_guideline(library=library)
        if proposal.source == SuggestionSource.LLM:
            line = proposal.text.rstrip()
        else:
            line = proposal.text.split(":")[0].rstrip(".") + "."
        addition = f"- {line}\n"
        text = current + ("" if not current or current.endswith("\n") else "\n") + addition
        actions.write_guideline(library=library, text=text)
    proposal.status = "accepted" if accept else "discarded"
    proposal.decided_at = timezone.now()
    proposal.save(update_fields=["status", "decided_at"])
    return proposal
