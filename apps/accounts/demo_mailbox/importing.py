"""The demo mailbox written as a zip of .eml files and imported through the ordinary importer."""

from __future__ import annotations

import datetime as dt
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from apps.accounts.actions import AccountNameTaken, get_or_create_local_account
from apps.accounts.demo_mailbox.generator import build_demo_messages
from apps.accounts.demo_mailbox.model import DEMO_ACCOUNT_NAME, DEMO_ANCHOR, DemoMail
from apps.accounts.demo_mailbox.people import ME
from apps.accounts.importers import import_path


def write_demo_archive(path: Path, mails: list[DemoMail]) -> Path:
    """A zip of .eml files, `<folder>/<nnnn>-<key>.eml`, in delivery order across all folders.

    The importer names folders after the directories inside the zip and reads members in order, so
    every reply is stored after the message it answers, whichever folder each one lives in.
    """
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for index, mail in enumerate(mails, start=1):
            info = zipfile.ZipInfo(f"{mail.folder}/{index:04d}-{mail.key}.eml", date_time=_zip_time(mail.when))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, mail.to_email().as_bytes())
    return path


def _zip_time(when: dt.datetime) -> tuple[int, int, int, int, int, int]:
    utc = when.astimezone(dt.UTC)
    return (utc.year, utc.month, utc.day, utc.hour, utc.minute, utc.second)


def import_demo_mailbox(*, owner: Any, stdout: Any, anchor: dt.datetime | None = None) -> None:
    """Create (or reuse) the local "Demo" account and import the generated mailbox into it.

    Re-running is safe: stable Message-IDs make every message a duplicate the second time.
    """
    try:
        account = get_or_create_local_account(owner=owner, name=DEMO_ACCOUNT_NAME)
    except AccountNameTaken as exc:
        stdout.write(f"Demo mailbox skipped: {exc}\n")
        return
    if not account.address:
        account.address = ME.address
        account.display_name = ME.name
        account.save(update_fields=["address", "display_name"])
    effective_anchor = min(anchor or DEMO_ANCHOR, dt.datetime.now(dt.UTC))
    mails = build_demo_messages(anchor=effective_anchor)
    with tempfile.TemporaryDirectory(prefix="mailagent-demo-") as tmp:
        archive = write_demo_archive(Path(tmp) / "demo-mailbox.zip", mails)
        summary = import_path(account, archive)
    stdout.write(
        f"Demo mailbox “{account.name}”: {summary.imported} messages imported, {summary.duplicates} already present, "
        f"{summary.parse_errors} with parse errors ({len(mails)} generated).\n"
    )
