"""Ranked alternatives that help (issue 36, item 3): when the suggestion abstains, the three best folders are
shown with what points to each, and one click moves the file into one of them (learned like any choice)."""

from __future__ import annotations

from typing import Any

from django.test import Client

from apps.organization import actions
from apps.organization.models import FileStatus, Library, SuggestionStatus
from apps.organization.suggesting import suggest_for_file


def test_an_abstaining_card_lists_three_folders_with_their_evidence_and_moves_by_one_click(
    client: Client, user: Any, seeded_library: Library
) -> None:
    # A threshold no guess on twelve filed files reaches: the suggestion abstains.
    actions.update_settings(owner=user, changes={"suggest_threshold": 0.999})
    file = actions.save_upload(
        library=seeded_library,
        name="card-payment.txt",
        chunks=[b"QNB Bank card payment: SkyBridge Airlines flight ticket, seat and boarding."],
    )
    suggestion = suggest_for_file(file=file)
    assert suggestion is not None
    assert suggestion.target_folder == "", suggestion.reasoning
    alternatives = {a["folder"]: a for a in suggestion.alternatives}
    assert len(suggestion.alternatives) == 3 and set(alternatives) == {"finance/bank", "travel", "school"}
    # Each of the two folders the file's words come from says so, with its own words and nearest filed file.
    bank, travel = alternatives["finance/bank"]["evidence"], alternatives["travel"]["evidence"]
    assert any(e.startswith("most like “") for e in bank) and any("qnb" in e for e in bank), bank
    assert any(e.startswith("most like “") for e in travel) and any("skybridge" in e for e in travel), travel
    assert not any("skybridge" in e for e in bank) and not any("qnb" in e for e in travel), (bank, travel)

    client.force_login(user)
    listed = client.get("/api/inbox/suggestions?status=pending").json()
    shown = {a["folder"]: a["evidence"] for a in listed[0]["alternatives"]}
    assert shown["travel"] == travel
    page = client.get("/organize/").content.decode()
    assert page.count('data-testid="org-alternative"') == 3
    assert page.count('data-testid="org-alternative-move"') == 3
    assert "Top folders, with what points to each" in page
    assert "shared words: " in page and "skybridge" in page

    response = client.post(f"/organize/suggestions/{suggestion.pk}/respond/", {"action": "choose", "folder": "travel"})
    assert response.status_code in (200, 302)
    suggestion.refresh_from_db()
    file.refresh_from_db()
    assert suggestion.status == SuggestionStatus.ACCEPTED and suggestion.final_folder == "travel"
    assert file.status == FileStatus.FILED and (seeded_library.root_path / "travel/card-payment.txt").is_file()
