"""Uploaded archives are imported by the worker (django-q2), not inside the web request.

An upload is saved to its own directory, `DATA_DIR/uploads/import-<random>/`, next to a `job.json` that says
whose it is, what to import it into and how far the import got. The request only saves the file and queues
`import_upload_task`; the worker imports it, writes its progress and outcome to job.json and removes the
uploaded file, on success and on error. The Accounts page lists the user's imports from these files (no
table: a job is the upload's own directory). `sweep_import_uploads` (scheduled) fails a job whose worker
stopped writing progress (a crash, a kill), removes its upload, forgets finished jobs after a day, and
removes spool files an import killed mid-zip left behind.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from apps.accounts import actions
from apps.accounts.importers import MailImportError, contains_mail, count_files, import_path
from apps.accounts.models import MailAccount, Provider

logger = logging.getLogger(__name__)

JOB_FILE = "job.json"
JOB_PREFIX = "import-"
# A running job writes its progress at least this often (also while it stores one large batch); one whose
# job.json is older than STALLED_SECONDS has lost its worker.
PROGRESS_EVERY_SECONDS = 1.0
STALLED_SECONDS = 15 * 60
FINISHED_KEPT_SECONDS = 24 * 3600
# Spool files of a zip member (tmp*) and Django's upload temp files (*.upload*) older than this are leftovers.
SPOOL_KEPT_SECONDS = 3600
ACTIVE = ("queued", "running")


@dataclass
class ImportJob:
    id: str
    owner_id: int
    upload_name: str
    file_name: str
    account_id: int | None
    new_account_name: str
    route_through_filters: bool
    status: str = "queued"  # queued, running, done, failed
    files_total: int = 0
    files_done: int = 0
    messages: int = 0
    message: str = ""  # the outcome, in words
    errors: list[str] = field(default_factory=list)
    warning: bool = False
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    @property
    def percent(self) -> int:
        if self.status in ("done", "failed"):
            return 100
        return int(100 * self.files_done / self.files_total) if self.files_total else 0

    @property
    def created(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.created_at, tz=timezone.get_current_timezone())


def uploads_dir() -> Path:
    path = Path(settings.DATA_DIR) / "uploads"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _job_dir(job_id: str) -> Path:
    if not job_id.startswith(JOB_PREFIX) or "/" in job_id or job_id in {".", ".."}:
        raise ValueError(f"not an import job id: {job_id!r}")
    return uploads_dir() / job_id


def _write(job: ImportJob) -> None:
    job.updated_at = time.time()
    directory = _job_dir(job.id)
    temporary = directory / f".{JOB_FILE}.tmp"
    temporary.write_text(json.dumps(asdict(job)))
    os.replace(temporary, directory / JOB_FILE)


def load_job(job_id: str) -> ImportJob | None:
    try:
        data = json.loads((_job_dir(job_id) / JOB_FILE).read_text())
    except (OSError, ValueError):
        return None
    return ImportJob(**data)


def start_import(
    *, owner: Any, upload_dir: Path, file_name: str, upload_name: str, account: MailAccount | None,
    new_account_name: str, route_through_filters: bool,
) -> ImportJob:  # fmt: skip
    """Record a saved upload (upload_dir/file_name) as a queued job and queue its import once committed."""
    job = ImportJob(
        id=upload_dir.name,
        owner_id=int(owner.pk),
        upload_name=upload_name,
        file_name=file_name,
        account_id=account.pk if account is not None else None,
        new_account_name=new_account_name,
        route_through_filters=route_through_filters,
    )
    _write(job)
    from django_q.tasks import async_task

    transaction.on_commit(lambda: async_task("apps.accounts.tasks.import_upload_task", job.id, task_name=job.id))
    return job


def new_upload_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix=JOB_PREFIX, dir=uploads_dir()))


def _summary_text(account: MailAccount, summary: Any, route: bool) -> str:
    text = (
        f"Imported into “{account.name}”: {summary.imported} new, {summary.duplicates} duplicates, "
        f"{summary.parse_errors} with parse errors, from {summary.files} file(s)."
    )
    if summary.skipped:
        text += f" {summary.skipped} item(s) skipped."
    if route and summary.imported:
        text += " The new mail goes through your filters (see Runs)."
    return text


def run_import(job_id: str) -> ImportJob | None:
    """The worker's part: import the upload, record progress and the outcome, remove the uploaded file."""
    job = load_job(job_id)
    if job is None or job.status != "queued":
        return job  # vanished (swept) or already taken
    directory = _job_dir(job_id)
    path = directory / job.file_name
    job.status = "running"
    _write(job)
    try:
        _import(job, path)
    except MailImportError as exc:
        job.status, job.message = "failed", f"Import of {job.upload_name} failed: {exc}"
    except Exception as exc:
        logger.exception("import %s failed", job_id)
        job.status = "failed"
        job.message = f"Import of {job.upload_name} failed: {type(exc).__name__}: {exc}. Nothing more was imported."
    finally:
        _remove_upload(directory)
        _write(job)
    return job


def _import(job: ImportJob, path: Path) -> None:
    found, scanned = contains_mail(path)
    if not found:
        reasons = "; ".join(scanned.errors[:3]) or "no file in it starts like an email"
        job.status = "failed"
        job.message = f"No messages found in {job.upload_name}: {reasons}. Nothing was imported" + (
            " and no account was created." if job.account_id is None else "."
        )
        return
    if job.account_id is not None:
        account = MailAccount.objects.filter(pk=job.account_id, owner_id=job.owner_id, provider=Provider.LOCAL).first()
        if account is None:
            raise MailImportError("the account it was meant for no longer exists")
    else:
        try:
            owner = get_user_model().objects.get(pk=job.owner_id)
            account = actions.get_or_create_local_account(owner=owner, name=job.new_account_name)
        except actions.AccountNameTaken as exc:
            raise MailImportError(str(exc)) from None
    job.files_total = count_files(path)
    last_written = 0.0

    def progress(files: int) -> None:
        nonlocal last_written
        job.files_done += files
        if time.monotonic() - last_written >= PROGRESS_EVERY_SECONDS:
            last_written = time.monotonic()
            _write(job)

    summary = import_path(account, path, progress=progress, route_through_filters=job.route_through_filters)
    job.status = "done"
    job.files_done = max(job.files_done, summary.files)
    job.messages = summary.messages
    job.message = _summary_text(account, summary, job.route_through_filters)
    job.errors = summary.errors[:5]
    job.warning = bool(summary.skipped or summary.parse_errors)


def _remove_upload(directory: Path) -> None:
    """Everything in the job's directory but job.json (the upload; nothing else is put there)."""
    for entry in directory.iterdir():
        if entry.name == JOB_FILE:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def jobs_for_user(*, owner: Any, limit: int = 5) -> list[ImportJob]:
    owner_id = int(owner.pk)
    jobs = []
    for directory in uploads_dir().glob(f"{JOB_PREFIX}*"):
        job = load_job(directory.name)
        if job is not None and job.owner_id == owner_id:
            jobs.append(job)
    return sorted(jobs, key=lambda job: job.created_at, reverse=True)[:limit]


def sweep_import_uploads(*, now: float | None = None) -> dict[str, int]:
    """Fail jobs whose worker is gone (no progress for STALLED_SECONDS) and remove their upload; forget
    finished jobs after a day; remove upload directories without a job and old spool files."""
    now = time.time() if now is None else now
    counts = {"stalled": 0, "forgotten": 0, "orphans": 0, "spool_files": 0}
    for entry in uploads_dir().iterdir():
        try:
            age = now - entry.stat().st_mtime
        except OSError:
            continue
        if entry.is_dir() and entry.name.startswith(JOB_PREFIX):
            job = load_job(entry.name)
            if job is None:
                if age > SPOOL_KEPT_SECONDS:  # an upload saved by a request that died before its job.json
                    shutil.rmtree(entry, ignore_errors=True)
                    counts["orphans"] += 1
                continue
            if job.active and now - job.updated_at > STALLED_SECONDS:
                _remove_upload(entry)
                job.status = "failed"
                job.message = (
                    f"Import of {job.upload_name} stopped: its worker made no progress for "
                    f"{STALLED_SECONDS // 60} minutes (stopped or killed). What was stored is kept; upload it "
                    "again to import the rest (stored messages are skipped)."
                )
                _write(job)
                counts["stalled"] += 1
            elif not job.active and now - job.updated_at > FINISHED_KEPT_SECONDS:
                shutil.rmtree(entry, ignore_errors=True)
                counts["forgotten"] += 1
        elif entry.is_file() and age > SPOOL_KEPT_SECONDS and (entry.name.startswith("tmp") or ".upload" in entry.name):
            entry.unlink(missing_ok=True)
            counts["spool_files"] += 1
    return counts
