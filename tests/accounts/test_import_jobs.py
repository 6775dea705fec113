"""Uploaded archives are imported by the worker, not in the request: the real web server takes the upload,
a real `manage.py qcluster` imports it, progress and outcome are in the job's file, and the upload is removed
on success, on error, and by the sweeper after a crash."""

from __future__ import annotations

import http.client
import io
import json
import os
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings

from apps.accounts import import_jobs
from apps.accounts.models import MailAccount, Message
from apps.accounts.tasks import import_upload_task, sweep_import_uploads_task
from tests.accounts.test_hostile_mail import corpus_message
from tests.mailagent.test_request_limits import BOUNDARY, Server, _csrf_pair, _session_cookie, server
from tests.services import qcluster, subprocess_env

__all__ = ["server"]  # the real web server fixture (test_request_limits.py)


def _zip_of_messages(count: int) -> bytes:
    real = corpus_message()
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for index in range(count):
            archive.writestr(f"inbox/{index}.eml", real.replace(b"boendemalmoborg-1834", f"job{index}".encode()))
    return data.getvalue()


def _upload(port: int, cookies: str, fields: bytes, name: str, content: bytes) -> int:
    body = (
        fields
        + (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + content
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request(
            "POST",
            "/mail/accounts/import/",
            body=body,
            headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}", "Cookie": cookies},
        )
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def _uploads() -> Path:
    return Path(django_settings.DATA_DIR) / "uploads"


def _jobs(owner: Any) -> list[import_jobs.ImportJob]:
    return import_jobs.jobs_for_user(owner=owner, limit=50)


@pytest.mark.django_db
def test_a_failed_import_removes_its_upload_and_says_why(user: Any, settings: Any, tmp_path: Path) -> None:
    settings.DATA_DIR = tmp_path
    directory = import_jobs.new_upload_dir()
    (directory / "Imported.mbox").write_bytes(b"From a@example.com Tue Jul 19 11:54:24 2016\n" + corpus_message())
    account = MailAccount.objects.create(owner=user, name="Gone", provider="local")
    job = import_jobs.ImportJob(
        id=directory.name,
        owner_id=user.pk,
        upload_name="saved.mbox",
        file_name="Imported.mbox",
        account_id=account.pk,
        new_account_name="",
        route_through_filters=False,
    )
    import_jobs._write(job)
    account.delete()
    assert import_upload_task(job.id)["status"] == "failed"
    finished = import_jobs.load_job(job.id)
    assert finished is not None
    assert finished.message == "Import of saved.mbox failed: the account it was meant for no longer exists"
    assert [entry.name for entry in directory.iterdir()] == ["job.json"]


@pytest.mark.django_db
def test_the_sweeper_cleans_up_after_a_crashed_import(user: Any, settings: Any, tmp_path: Path) -> None:
    settings.DATA_DIR = tmp_path  # only this test's uploads
    uploads = _uploads()
    stalled = import_jobs.new_upload_dir()
    (stalled / "big.mbox").write_bytes(b"x" * 1024)
    job = import_jobs.ImportJob(
        id=stalled.name,
        owner_id=user.pk,
        upload_name="big.mbox",
        file_name="big.mbox",
        account_id=None,
        new_account_name="Big",
        route_through_filters=False,
        status="running",
    )
    import_jobs._write(job)
    orphan = import_jobs.new_upload_dir()  # a request died between saving the upload and writing job.json
    (orphan / "a.mbox").write_bytes(b"y")
    spool = uploads / "tmpabc123"  # a zip member's spool file of a killed import
    spool.write_bytes(b"z")
    django_upload = uploads / "tmpq1w2e3.upload.mbox"  # Django's temporary upload file
    django_upload.write_bytes(b"z")
    fresh_spool = uploads / "tmpfresh"
    fresh_spool.write_bytes(b"in use")
    an_hour_ago = time.time() - import_jobs.SPOOL_KEPT_SECONDS - 60
    for path in (orphan, spool, django_upload):
        os.utime(path, (an_hour_ago, an_hour_ago))

    assert sweep_import_uploads_task() == {"stalled": 0, "forgotten": 0, "orphans": 1, "spool_files": 2}
    assert not orphan.exists() and not spool.exists() and not django_upload.exists() and fresh_spool.exists()
    assert (stalled / "big.mbox").exists()  # still running as far as anyone knows

    later = time.time() + import_jobs.STALLED_SECONDS + 60
    assert import_jobs.sweep_import_uploads(now=later)["stalled"] == 1
    failed = import_jobs.load_job(stalled.name)
    assert failed is not None and failed.status == "failed"
    assert failed.message.startswith("Import of big.mbox stopped: its worker made no progress for 15 minutes")
    assert [entry.name for entry in stalled.iterdir()] == ["job.json"]
    assert json.loads((stalled / "job.json").read_text())["status"] == "failed"

    much_later = later + import_jobs.FINISHED_KEPT_SECONDS + 60
    assert import_jobs.sweep_import_uploads(now=much_later)["forgotten"] == 1
    assert not stalled.exists()
    assert not fresh_spool.exists()  # untouched for a day: a leftover too


# Last in the file: a transactional test makes the next test set the database up again (~30 s).
@pytest.mark.django_db(transaction=True)
def test_the_worker_imports_an_upload_and_removes_it(server: Server, user: Any) -> None:
    cookie, fields = _csrf_pair()
    cookies = f"{_session_cookie(user)}; {cookie}"
    started = time.monotonic()
    assert _upload(server.port, cookies, fields, "three.zip", _zip_of_messages(3)) == 302
    answered = time.monotonic() - started
    (job,) = _jobs(user)
    assert job.status == "queued" and job.upload_name == "three.zip"  # the request only saved and queued it
    assert not MailAccount.objects.filter(owner=user).exists()

    with qcluster(subprocess_env()) as cluster:
        deadline = time.monotonic() + 60
        while (current := import_jobs.load_job(job.id)) is not None and current.active:
            assert time.monotonic() < deadline, "the worker did not finish the import within 60 s"
            assert cluster.poll() is None, "qcluster exited"
            time.sleep(0.2)
    assert current is not None and current.status == "done", current
    assert current.message.startswith("Imported into “Uploads”: 3 new, 0 duplicates")
    assert current.files_done == current.files_total == 3  # the zip's members
    assert Message.objects.filter(account__owner=user, account__name="Uploads").count() == 3
    assert [entry.name for entry in (_uploads() / job.id).iterdir()] == ["job.json"]  # the upload is gone
    print(f"upload answered in {answered:.2f} s; imported by the worker")

    page = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    page.request("GET", "/mail/accounts/", headers={"Cookie": cookies})
    html = page.getresponse().read().decode()
    assert 'data-testid="import-jobs"' in html and "Imported into “Uploads”: 3 new" in html
    assert "every 2s" not in html  # nothing running: the list stops polling
