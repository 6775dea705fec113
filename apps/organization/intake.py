"""Mail attachments into the library inbox, per account ("save attachments to the library inbox") and per
filter (a filter with the switch saves the attachments of the mail it matches, even when its account's switch
is off), within the account's size and type limits, with provenance (message, sender, subject, date) kept on
the file. Each attachment is handled once: a SavedAttachment row records the outcome (saved, or why it was
skipped)."""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import PurePath
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.accounts.actions import fetch_attachment_bytes
from apps.accounts.models import Attachment, MailAccount
from apps.organization import actions
from apps.organization.library import OrganizationError, get_library, get_settings
from apps.organization.models import AttachmentIntake, FileSource, SavedAttachment
from apps.organization.suggesting import suggest_for_file
from apps.routing.matching import CompiledFilter, InvalidPattern, RuleSet, compile_pattern
from apps.routing.models import Filter

logger = logging.getLogger(__name__)
SWEEP_WINDOW = dt.timedelta(days=7)
SWEEP_LIMIT = 500


def set_intake(
    *,
    account: MailAccount,
    enabled: bool,
    max_bytes: int | None = None,
    allowed_suffixes: list[str] | None = None,
    include_inline: bool | None = None,
) -> AttachmentIntake:
    intake, _ = AttachmentIntake.objects.get_or_create(account=account)
    if enabled and not intake.enabled:
        intake.enabled_at = timezone.now()
    intake.enabled = enabled
    if max_bytes is not None:
        if max_bytes <= 0:
            raise OrganizationError("The size limit must be a positive number of bytes.")
        intake.max_bytes = max_bytes
    if allowed_suffixes is not None:
        intake.allowed_suffixes = sorted(
            {("." + s.strip().lower().lstrip(".")) for s in allowed_suffixes if s.strip().strip(".")}
        )
    if include_inline is not None:
        intake.include_inline = include_inline
    intake.save()
    return intake


def skip_reason(attachment: Attachment, intake: AttachmentIntake) -> str:
    if attachment.is_inline and not intake.include_inline:
        return "skipped: inline part"
    if not attachment.filename:
        return "skipped: no file name"
    if attachment.size and attachment.size > intake.max_bytes:
        return f"skipped: {attachment.size} bytes is over the {intake.max_bytes}-byte limit"
    suffix = PurePath(attachment.filename).suffix.lower()
    if intake.allowed_suffixes and suffix not in intake.allowed_suffixes:
        return f"skipped: type {suffix or '(none)'} is not in {', '.join(intake.allowed_suffixes)}"
    return ""


def _provenance(attachment: Attachment) -> dict[str, Any]:
    message = attachment.message
    return {
        "message_id": message.pk,
        "account_id": message.account_id,
        "sender": message.from_address,
        "sender_name": message.from_name,
        "subject": message.subject,
        "date": message.date.isoformat() if message.date else None,
        "attachment_id": attachment.pk,
    }


def save_attachment(*, attachment: Attachment, intake: AttachmentIntake) -> SavedAttachment | None:
    """Save one attachment (or record why not); None when another worker handled it already."""
    if SavedAttachment.objects.filter(attachment=attachment).exists():
        return None
    reason = skip_reason(attachment, intake)
    file = None
    if not reason:
        try:
            payload = fetch_attachment_bytes(attachment=attachment)
        except Exception as exc:  # provider errors: leave no row, so the sweep tries again later
            logger.warning("organization: fetching attachment %s failed: %s", attachment.pk, exc)
            return None
        if len(payload) > intake.max_bytes:
            reason = f"skipped: {len(payload)} bytes is over the {intake.max_bytes}-byte limit"
        else:
            library = get_library(owner=attachment.message.account.owner)
            try:
                file = actions.save_upload(
                    library=library,
                    name=attachment.filename,
                    chunks=[payload],
                    source=FileSource.ATTACHMENT,
                    provenance=_provenance(attachment),
                )
            except OrganizationError as exc:  # e.g. a root outside the allowed folders: no row, so
                logger.warning("organization: attachment %s not saved: %s", attachment.pk, exc)  # retried later
                return None
    try:
        with transaction.atomic():
            record = SavedAttachment.objects.create(attachment=attachment, file=file, outcome=reason or "saved")
    except IntegrityError:
        return None
    if file is not None and get_settings(owner=file.library.owner).auto_suggest:
        suggest_for_file(file=file)
    return record


def _switch_filters(owner_id: int) -> Any:
    return Filter.objects.filter(
        save_attachments=True, enabled=True, director__enabled=True, director__owner_id=owner_id
    ).select_related("director")


def has_switch_filters(*, account_id: int) -> bool:
    owner_id = MailAccount.objects.filter(pk=account_id).values_list("owner_id", flat=True).first()
    return owner_id is not None and _switch_filters(owner_id).exists()


def matched_by_switch_filters(*, owner_id: int, message_ids: list[int]) -> list[int]:
    """The messages that at least one of the owner's enabled filters with "save attachments" matches (every
    such filter is tried, not only the first per director as routing does)."""
    from apps.routing.selectors import routable_messages

    compiled = []
    for item in _switch_filters(owner_id).order_by("order", "pk"):
        try:
            pattern = compile_pattern(item.regex, case_insensitive=item.case_insensitive)
        except InvalidPattern:
            continue
        # One group per filter (director_id = filter id), so that every switch filter is evaluated.
        compiled.append(
            CompiledFilter(
                id=item.pk,
                director_id=item.pk,
                director_name=item.director.name,
                owner_id=owner_id,
                field=item.field,
                regex=item.regex,
                description=item.description,
                created_at=item.created_at,
                pattern=pattern,
            )
        )
    if not compiled:
        return []
    rules = RuleSet(compiled)
    return [
        message.message_id
        for message in routable_messages(message_ids)
        if rules.route(message, respect_creation=False).matches
    ]


def save_message_attachments(*, account_id: int, message_ids: list[int]) -> int:
    """Save the attachments of these newly stored messages: all of them when the account's switch is on, else
    those of the messages a filter with the switch matches (with the account's limits)."""
    intake = AttachmentIntake.objects.filter(account_id=account_id, enabled=True).first()
    if intake is None:
        owner_id = MailAccount.objects.filter(pk=account_id).values_list("owner_id", flat=True).first()
        if owner_id is None:
            return 0
        message_ids = matched_by_switch_filters(owner_id=owner_id, message_ids=message_ids)
        if not message_ids:
            return 0
        intake, _ = AttachmentIntake.objects.get_or_create(account_id=account_id)
    saved = 0
    attachments = Attachment.objects.filter(message_id__in=message_ids, message__account_id=account_id)
    for attachment in attachments.select_related("message__account__owner").order_by("pk"):
        record = save_attachment(attachment=attachment, intake=intake)
        saved += int(record is not None and record.file_id is not None)
    return saved


def _sweep_filter_intake(since: dt.datetime) -> int:
    """Recent mail of owners with "save attachments" filters, on accounts whose own switch is off: attachments
    no task handled are saved when a switch filter matches their message, else recorded as not covered (so
    the sweep does not evaluate them again)."""
    saved = 0
    owners = set(
        Filter.objects.filter(save_attachments=True, enabled=True, director__enabled=True).values_list(
            "director__owner_id", flat=True
        )
    )
    for account in MailAccount.objects.filter(owner_id__in=owners).exclude(attachment_intake__enabled=True):
        start = max(
            since, _switch_filters(account.owner_id).order_by("updated_at").values_list("updated_at", flat=True)[0]
        )
        pending = list(
            Attachment.objects.filter(message__account_id=account.pk, message__stored_at__gte=start)
            .exclude(pk__in=SavedAttachment.objects.values("attachment_id"))
            .select_related("message__account__owner")
            .order_by("pk")[:SWEEP_LIMIT]
        )
        if not pending:
            continue
        matched = set(
            matched_by_switch_filters(owner_id=account.owner_id, message_ids=sorted({a.message_id for a in pending}))
        )
        intake, _ = AttachmentIntake.objects.get_or_create(account=account)
        for attachment in pending:
            if attachment.message_id in matched:
                record = save_attachment(attachment=attachment, intake=intake)
                saved += int(record is not None and record.file_id is not None)
            else:
                SavedAttachment.objects.get_or_create(
                    attachment=attachment, defaults={"outcome": "skipped: no filter with the switch matched"}
                )
    return saved


def sweep_attachments() -> int:
    """Attachments of recent mail on intake-enabled accounts (or matched by a filter with the switch) that no
    task handled (a lost or failed one)."""
    since = timezone.now() - SWEEP_WINDOW
    saved = _sweep_filter_intake(since)
    for intake in AttachmentIntake.objects.filter(enabled=True).select_related("account"):
        start = max(since, intake.enabled_at or since)
        pending = (
            Attachment.objects.filter(message__account_id=intake.account_id, message__stored_at__gte=start)
            .exclude(pk__in=SavedAttachment.objects.values("attachment_id"))
            .select_related("message__account__owner")
            .order_by("pk")[:SWEEP_LIMIT]
        )
        for attachment in pending:
            record = save_attachment(attachment=attachment, intake=intake)
            saved += int(record is not None and record.file_id is not None)
    return saved
