"""Ingest benchmark: import all of ../shared/data/enron into a fresh database and print msg/s.

    .venv/bin/python bench/ingest.py [--limit-mailboxes N] [--compare] [--database-url URL]

--compare also indexes the same messages with `notmuch new` and `mu index` (Debian packages notmuch,
maildir-utils) and prints mailagent's rate relative to theirs. Unpacking is not timed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
ENRON = REPO_ROOT.parent / "shared" / "data" / "enron" / "enron-inbox.tar.gz"
EXPECTED_FILES = 44_755
EXPECTED_MESSAGES = 44_715


def unpack(target: Path, limit_mailboxes: int | None) -> Path:
    with tarfile.open(ENRON, "r:gz") as archive:
        members = [m for m in archive.getmembers() if m.isfile()]
        if limit_mailboxes:
            boxes = sorted({m.name.split("/")[1] for m in members})[:limit_mailboxes]
            members = [m for m in members if m.name.split("/")[1] in boxes]
        archive.extractall(target, members=members, filter="data")
    return target / "maildir"


def count_files(root: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(root))


def run_mailagent(source: Path, workdir: Path, database_url: str | None) -> tuple[float, int, int]:
    os.environ["DATA_DIR"] = str(workdir / "data")
    os.environ.setdefault("VX_MAILAGENT_KEY", "7e" * 32)
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailagent.settings")
    sys.path.insert(0, str(REPO_ROOT))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from apps.accounts.actions import create_local_account
    from apps.accounts.importers import import_path
    from apps.accounts.models import Message

    owner = get_user_model().objects.create_user(username="bench", email="bench@example.com")
    account = create_local_account(owner=owner, name="enron")
    started = time.perf_counter()
    summary = import_path(account, source)
    seconds = time.perf_counter() - started
    stored = Message.objects.filter(account=account).count()
    again = import_path(account, source)
    print(
        f"mailagent: {summary.messages} files read, {stored} stored, {summary.duplicates} duplicates, "
        f"{summary.parse_errors} parse errors; second run stored {again.imported}"
    )
    return seconds, summary.messages, stored


def run_notmuch(source: Path, workdir: Path) -> float | None:
    if shutil.which("notmuch") is None:
        print("notmuch: not installed (apt-get install notmuch)")
        return None
    config = workdir / "notmuch-config"
    config.write_text(f"[database]\npath={source}\n[new]\ntags=unread;inbox;\n[maildir]\nsynchronize_flags=false\n")
    env = dict(os.environ, NOTMUCH_CONFIG=str(config))
    started = time.perf_counter()
    subprocess.run(["notmuch", "new", "--quiet"], env=env, check=True)
    return time.perf_counter() - started


def run_mu(source: Path, workdir: Path) -> float | None:
    if shutil.which("mu") is None:
        print("mu: not installed (apt-get install maildir-utils)")
        return None
    # mu only indexes Maildirs: hard-link every message into one Maildir's cur/ (not timed).
    maildir = workdir / "mu-maildir"
    for sub in ("cur", "new", "tmp"):
        (maildir / sub).mkdir(parents=True, exist_ok=True)
    for index, (current, _, files) in enumerate(os.walk(source)):
        for name in files:
            os.link(Path(current) / name, maildir / "cur" / f"{index}.{name}:2,S")
    muhome = workdir / "muhome"
    subprocess.run(["mu", "init", f"--muhome={muhome}", f"--maildir={maildir}"], check=True, capture_output=True)
    started = time.perf_counter()
    subprocess.run(["mu", "index", f"--muhome={muhome}", "--quiet"], check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit-mailboxes", type=int, help="Only the first N mailboxes (quick runs).")
    parser.add_argument("--compare", action="store_true", help="Also time notmuch new and mu index.")
    parser.add_argument("--database-url", help="Benchmark against this database instead of a fresh SQLite file.")
    args = parser.parse_args()
    if not ENRON.exists():
        print(f"{ENRON} not found: this benchmark needs the team's ../shared/data")
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="mailagent-bench-"))
    try:
        print("unpacking …", flush=True)
        source = unpack(workdir / "src", args.limit_mailboxes)
        files = count_files(source)
        print(f"{files} message files in {source}")
        seconds, read, stored = run_mailagent(source, workdir, args.database_url)
        rate = read / seconds
        print(f"mailagent ingest: {read} messages in {seconds:.1f}s = {rate:,.0f} msg/s (parse + store + index)")
        status = 0
        if not args.limit_mailboxes and (files != EXPECTED_FILES or stored != EXPECTED_MESSAGES):
            print(f"COUNT MISMATCH: expected {EXPECTED_FILES} files → {EXPECTED_MESSAGES} messages")
            status = 1
        if args.compare:
            for name, runner in (("notmuch new", run_notmuch), ("mu index", run_mu)):
                other = runner(source, workdir)
                if other:
                    ratio = other / seconds
                    print(f"{name}: {other:.1f}s = {files / other:,.0f} msg/s; mailagent is {ratio:.2f}x its speed")
        return status
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
