"""Hostile-input benchmark: parse time of the probe's pathological messages (one core, no database).

    .venv/bin/python bench/hostile_mail.py

Each case is built around a real message from ../shared/data/mime. CPU time is this process's own (stable
on a busy machine); wall time includes waiting for a core. Before the bounds, the nested <div>s
took more than 10 minutes (stopped), the 300,000 attributes 5.7 s, and the 2 MB To: list lost the
Subject, Message-ID and Date.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CORPUS = REPO_ROOT.parent / "shared" / "data" / "mime" / "notmuch" / "html" / "embedded-image"


def cases(real: bytes) -> dict[str, Callable[[], bytes]]:
    head = real.partition(b"\n\n")[0]
    envelope = b"".join(
        line
        for line in head.splitlines(keepends=True)
        if not line.lower().startswith((b"content-", b"mime-version", b" ", b"\t"))
    )

    def nested(depth: int) -> bytes:
        html = b"<div>" * depth + b"deep" + b"</div>" * depth
        return envelope + b"Content-Type: text/html\n\n" + html

    def huge_to() -> bytes:
        recipients = ",\n ".join(f"Recipient {i} <r.{i:05d}@lists.example.org>" for i in range(50_000))
        return f"To: {recipients}\n".encode() + real

    def wide_html() -> bytes:
        return envelope + b"Content-Type: text/html\n\n" + b"<div><p>paragraph</p></div>" * 100_000

    def attribute_soup() -> bytes:
        tag = b"<div " + b" ".join(b'data-a%d="v%d"' % (i, i) for i in range(300_000)) + b">inside</div>"
        return envelope + b"Content-Type: text/html\n\n" + tag

    return {
        "one <div> with 300,000 attributes": attribute_soup,
        "200,000 nested <div>s (2.2 MB)": lambda: nested(200_000),
        "256 nested <div>s (the render limit)": lambda: nested(256),
        "100,000 sibling blocks (2.7 MB HTML)": wide_html,
        "2 MB To: list (50,000 recipients)": huge_to,
        "the real message as is": lambda: real,
    }


def main() -> None:
    sys.path.insert(0, str(REPO_ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailagent.settings")
    import django

    django.setup()
    from apps.accounts.parsing import parse_message

    real = CORPUS.read_bytes()
    print(f"{'case':40} {'size':>10} {'wall s':>7} {'cpu s':>6}  note")
    for name, build in cases(real).items():
        raw = build()
        started, cpu = time.perf_counter(), time.process_time()
        parsed = parse_message(raw)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        note = (parsed.parse_error or "ok")[:70]
        print(f"{name:40} {len(raw):>10} {elapsed:>7.3f} {cpu:>6.3f}  subject={bool(parsed.subject)} {note}")


if __name__ == "__main__":
    main()
