from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apps.organization import actions
from apps.organization.library import get_library
from apps.organization.models import Library
from apps.organization.roots import library_base

# A small library like a newcomer's: a few folders with a few documents each (invoices, travel, school).
SEED_FILES: dict[str, str] = {
    "finance/bank/statement-2026-01.txt": "QNB Bank monthly account statement. IBAN TR12. Closing balance 4,210 TRY.",
    "finance/bank/statement-2026-02.txt": "QNB Bank account statement for February. Card payments and closing balance.",
    "finance/bank/statement-2026-03.txt": "Account statement QNB Bank March: transfers, IBAN, balance carried forward.",
    "finance/bank/card-limit.txt": "QNB Bank credit card limit increase confirmation for your account.",
    "travel/flight-ist-ber.txt": "Boarding pass SkyBridge Airlines flight IST to BER seat 14C gate B12 departure.",
    "travel/hotel-pera.txt": "Pera Garden Hotel reservation confirmation, check-in 3 nights, room booking.",
    "travel/rail-ticket.txt": "RailConnect train ticket Berlin to Hamburg, coach 7 seat 42, departure platform.",
    "travel/flight-ber-ist.txt": "SkyBridge Airlines e-ticket return flight BER to IST boarding gate seat.",
    "school/report-card.txt": "Elif school report card: mathematics, science, teacher comments for the term.",
    "school/trip-permission.txt": "School trip permission slip for the class museum visit, teacher signature.",
    "school/parent-meeting.txt": "Parent teacher meeting invitation at the school, class schedule and homework.",
    "school/term-calendar.txt": "School term calendar: holidays, exams, class timetable for pupils.",
}


def write(root: Path, relative: str, content: str | bytes) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


@pytest.fixture
def library(user: Any, tmp_path: Path) -> Library:
    actions.update_settings(owner=user, changes={"root": str(library_base(user.pk) / "library")})
    return get_library(owner=user)


@pytest.fixture
def seeded_library(library: Library) -> Library:
    # Four files per folder is too little for a calibrated 80%: these tests are about moves, not confidence.
    actions.update_settings(owner=library.owner, changes={"suggest_threshold": 0.5})
    for relative, text in SEED_FILES.items():
        write(library.root_path, relative, text)
    actions.scan_library(library=library)
    return library
