"""A file as the folder classifier sees it: the Sample (header, body, metadata keys, date, embedding) made
from a file's name, text and metadata, the keys it is counted and looked up by, and the names of the kinds of
evidence (FEATURES) the classifier computes for it. No Django here."""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

MAX_BODY_CHARS = 6000
EMBEDDING_TEXT_CHARS = 1000  # header + the start of the body: what the embedder reads of a file
SOURCES = ("sender", "domain", "recipients", "thread", "shape", "types")
# Sources whose shared keys count as evidence on their own (a shared file type or subject shape does not).
IDENTIFYING_SOURCES = ("sender", "domain", "recipients", "thread")
# The same three similarities in the local embedder's space (apps.search.embedders): meaning rather than shared
# words, so a file worded unlike anything filed still finds the files it is about.
EMBEDDING_FEATURES = ("embedding_nearest", "embedding_vote", "embedding_centroid")
# Sources whose most recent filings get their own evidence: a sender's mail (or a thread) that moved to another
# folder at some date goes on going there, whatever its older filings say.
RECENT_SOURCES = ("sender", "thread")
RECENT_FEATURES = tuple(f"{source}_recent" for source in RECENT_SOURCES)
FEATURES = (
    "prior",
    "naive_bayes",
    "nearest",
    "vote",
    "centroid",
    "period",
    *SOURCES,
    *EMBEDDING_FEATURES,
    *RECENT_FEATURES,
)

# A reply or forward prefix: one to four letters and a colon ("Re:", "FW:", "AW:", "SV:"), repeated; any script.
_REPLY_PREFIX = re.compile(r"^(?:\s*(?:[^\W\d_]{1,4})(?:\[\d+\])?\s*[:\uff1a]\s*)+")
_SPACES = re.compile(r"\s+")
_DIGITS = re.compile(r"\d+")


@dataclass(slots=True)
class Sample:
    header: str  # file name, sender, subject: short, identifying
    body: str
    folder: str = ""
    sender: str = ""
    recipients: tuple[str, ...] = ()
    subject: str = ""  # the subject (mail) or the name's stem (other files)
    message_id: str = ""
    references: tuple[str, ...] = ()  # In-Reply-To and References
    types: tuple[str, ...] = ()  # the file's suffix and its attachments' suffixes
    date: float = math.nan  # POSIX seconds of the mail's or document's own date, NaN when unknown
    # The file's embedding_text through the local embedder (L2-normalised), None when not embedded: the
    # embedding evidence is then absent for this file, the rest still counts.
    embedding: np.ndarray | None = None


def thread_subject(subject: str) -> str:
    return _SPACES.sub(" ", _REPLY_PREFIX.sub("", subject)).strip().lower()


def _suffix(name: str) -> str:
    suffix = Path(name).suffix.lower()
    return suffix if 1 < len(suffix) <= 8 else ""


def make_sample(*, name: str, text: str, metadata: dict[str, Any], folder: str = "") -> Sample:
    sender_address = str(metadata.get("sender") or "").lower()
    sender = " ".join(str(metadata.get(key) or "") for key in ("sender", "sender_name")).strip()
    title = str(metadata.get("title") or "")
    stem = Path(name).stem.replace("_", " ").replace("-", " ")
    header = " | ".join(part for part in (stem, Path(name).suffix.lower(), sender, title) if part)
    is_mail = bool(sender_address or title)
    attachments = [str(a) for a in metadata.get("attachments") or []]
    references = [str(r) for r in metadata.get("references") or []]
    if metadata.get("in_reply_to"):
        references.append(str(metadata["in_reply_to"]))
    return Sample(
        date=_timestamp(metadata.get("date")),
        header=header,
        body=text[:MAX_BODY_CHARS],
        folder=folder,
        sender=sender_address,
        recipients=tuple(sorted({str(r).lower() for r in metadata.get("recipients") or [] if r})),
        subject=title if is_mail else Path(name).stem,
        message_id=str(metadata.get("message_id") or ""),
        references=tuple(dict.fromkeys(r for r in references if r)),
        types=tuple(sorted({t for t in (_suffix(name), *(_suffix(a) for a in attachments)) if t})),
    )


def _timestamp(value: Any) -> float:
    try:
        parsed = dt.datetime.fromisoformat(str(value))
    except ValueError:
        return math.nan
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.timestamp()


def _stored_keys(sample: Sample, source: str) -> list[str]:
    """The keys a filed file contributes to a source's counts."""
    if source == "thread":
        keys = [f"m:{sample.message_id}"] if sample.message_id else []
        subject = thread_subject(sample.subject) if sample.sender else ""
        return [f"s:{subject}", *keys] if subject else keys
    return _lookup_keys(sample, source)


def _lookup_keys(sample: Sample, source: str) -> list[str]:
    """The keys a new file is looked up by (for the thread: its subject and the Message-IDs it refers to)."""
    if source == "sender":
        return [sample.sender] if sample.sender else []
    if source == "domain":
        domain = sample.sender.rpartition("@")[2]
        return [domain] if domain else []
    if source == "recipients":
        return list(sample.recipients)
    if source == "thread":
        subject = thread_subject(sample.subject) if sample.sender else ""
        return ([f"s:{subject}"] if subject else []) + [f"m:{r}" for r in sample.references]
    if source == "shape":
        shape = _DIGITS.sub("#", thread_subject(sample.subject))
        return [shape] if shape else []
    if source == "types":
        return list(sample.types)
    raise ValueError(source)


def sample_key(sample: Sample) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for part in (sample.folder, sample.header, sample.body, sample.message_id):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    # A file embedded since it was learned is a changed row: its embedding evidence must enter the tables.
    digest.update(b"e" if sample.embedding is not None else b"-")
    return digest.hexdigest()


def _light(sample: Sample) -> Sample:
    return replace(sample, body="", embedding=None)


def embedding_text(sample: Sample) -> str:
    """What the embedder reads of a file: its header (name, sender, subject) and the start of its body."""
    return f"{sample.header}\n{sample.body}"[:EMBEDDING_TEXT_CHARS]
