"""IMAP keywords ⇄ tags against a real Dovecot: keywords set or cleared on the server (by another client)
become the message's tags after a sync; tags added or taken off here reach the server as keywords through the
write-back ledger. `doveadm fetch` is the oracle for the server's keywords."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from apps.accounts import actions
from apps.accounts.labels import keyword_to_tag, label_keywords, label_to_keyword, tag_to_keyword
from apps.accounts.models import MailAccount, MailAction, MailActionStatus, MailTag, Message, MessageTag
from apps.accounts.providers.imap.provider import ImapProvider
from tests.accounts.test_imap_mirror import assert_mirrors, connect, mail, synced
from tests.fakes.dovecot import Mailbox
from tests.services import find_executable, missing_service

SYSTEM_FLAGS = {"\\seen", "\\flagged", "\\answered", "\\deleted", "\\draft", "\\recent"}


# -- the mapping (no server) -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "keyword"),
    [
        ("taxes-2024", "taxes-2024"),
        ("$label1", "$label1"),
        ("Project-X", "Project-X"),
        ("Über(alt)", "&ANw-ber&ACg-alt&ACk-"),
        ("R&D", "R&-D"),
        ("日本", "&ZeVnLA-"),
        ("a]b%c*d\\e{f", "a&AF0-b&ACU-c&ACo-d&AFw-e&AHs-f"),
    ],
)
def test_a_tag_and_its_keyword_map_both_ways_exactly(tag: str, keyword: str) -> None:
    assert tag_to_keyword(tag) == keyword
    assert keyword_to_tag(keyword) == tag
    # An IMAP atom: printable ASCII without atom-specials.
    assert all(0x21 <= ord(c) < 0x7F and c not in '(){%*"\\]' for c in keyword)


def test_protocol_keywords_and_system_flags_are_not_tags() -> None:
    flags = [b"\\Seen", b"$Forwarded", b"$MDNSent", b"$junk", b"NonJunk", b"Junk", b"$HasAttachment", b"$label1"]
    assert label_keywords(flags) == ("$label1",)
    # Another client's keyword that is not modified UTF-7 is taken as written.
    assert keyword_to_tag("R&D") == "R&D"
    # A Gmail label named like a protocol keyword is still a label: kept in a form that reads back as its name.
    assert label_to_keyword("Junk") == "&AEo-unk" and keyword_to_tag(label_to_keyword("Junk")) == "Junk"
    assert label_to_keyword("Clients") == "Clients"


# -- against Dovecot ----------------------------------------------------------------------------------------


def server_keywords(box: Mailbox) -> dict[str, dict[str, set[str]]]:
    """{folder: {Message-ID: {keyword, …}}} from `doveadm fetch` (Dovecot's own storage)."""
    doveadm = find_executable("doveadm")
    if doveadm is None:
        missing_service("doveadm is not installed (it comes with Debian's dovecot-core)")
    result = subprocess.run(
        [
            str(doveadm),
            "-c",
            str(box.server.config),
            "-f",
            "tab",
            "fetch",
            "-u",
            box.username,
            "mailbox flags hdr.message-id",
            "ALL",
        ],
        capture_output=True,
        check=True,
        timeout=60,
    )
    state: dict[str, dict[str, set[str]]] = {}
    for line in result.stdout.decode("utf-8", "replace").splitlines()[1:]:
        folder, flags, message_id = [*line.split("\t"), "", ""][:3]
        keywords = {flag for flag in flags.split() if flag.lower() not in SYSTEM_FLAGS}
        state.setdefault(folder, {})["".join(message_id.split()).strip("<>")] = keywords
    return state


def local_tags(account: MailAccount) -> dict[str, set[str]]:
    """{Message-ID: {tag, …}} of the account's live messages that carry tags."""
    tags: dict[str, set[str]] = {}
    for message_id, name in MessageTag.objects.filter(
        message__account=account, message__deleted_at=None, tag__owner=account.owner
    ).values_list("message__message_id", "tag__name"):
        tags.setdefault(message_id, set()).add(name)
    return tags


def expected_tags(box: Mailbox) -> dict[str, set[str]]:
    """The tags the server's keywords stand for: per message, the union over its folders."""
    tags: dict[str, set[str]] = {}
    for messages in server_keywords(box).values():
        for message_id, keywords in messages.items():
            names = {keyword_to_tag(keyword) for keyword in keywords} - {None}
            if names:
                tags.setdefault(message_id, set()).update(name for name in names if name is not None)
    return tags


def message(account: MailAccount, n: int) -> Message:
    return Message.objects.get(account=account, message_id=f"m{n}@mirror.test")


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_keywords_set_and_cleared_on_the_server_become_tags(imap_mailbox: Mailbox, user: Any) -> None:
    box = imap_mailbox
    box.create_folder("Projects")
    uid1 = box.append("INBOX", mail(1), flags=[b"$label1", b"Project-X", b"$Forwarded"])
    uid2 = box.append("INBOX", mail(2), flags=[b"&ANw-ber", b"\\Seen"])
    box.append("INBOX", mail(3))
    account = connect(box, user)
    synced(account)
    assert local_tags(account) == {"m1@mirror.test": {"$label1", "Project-X"}, "m2@mirror.test": {"Über"}}
    assert local_tags(account) == expected_tags(box)

    # Another client adds and removes keywords: the CONDSTORE flag re-read finds them.
    box.set_flags("INBOX", [uid1], [b"Project-X"], add=False)
    box.set_flags("INBOX", [uid2], [b"Urgent", b"$MDNSent"])
    synced(account)
    assert local_tags(account) == {"m1@mirror.test": {"$label1"}, "m2@mirror.test": {"Über", "Urgent"}}
    assert local_tags(account) == expected_tags(box)
    # A tag no message carries any more is gone.
    assert not MailTag.objects.filter(owner=user, key="project-x").exists()

    # A copy in another folder keeps its keywords; the tag stays while any copy has the keyword.
    box.copy("INBOX", [uid1], "Projects")
    synced(account)
    box.set_flags("INBOX", [uid1], [b"$label1"], add=False)
    synced(account)
    assert local_tags(account)["m1@mirror.test"] == {"$label1"}
    assert local_tags(account) == expected_tags(box)
    projects_uid = box.uids("Projects")[0]
    box.set_flags("Projects", [projects_uid], [b"$label1"], add=False)
    synced(account)
    assert "m1@mirror.test" not in local_tags(account)
    assert local_tags(account) == expected_tags(box)

    # A folder re-created (new UIDVALIDITY) is re-read with its keywords.
    box.set_flags("Projects", [projects_uid], [b"Renewed"])
    box.recreate_folder("Projects")
    synced(account)
    assert local_tags(account) == expected_tags(box)
    assert local_tags(account)["m1@mirror.test"] == {"Renewed"}
    assert_mirrors(box, account)


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_tags_added_and_removed_here_reach_the_server_as_keywords(
    imap_mailbox: Mailbox, user: Any, logged_in_client: Client
) -> None:
    box = imap_mailbox
    box.create_folder("Projects")
    box.append("INBOX", mail(1))
    box.append("INBOX", mail(2))
    box.copy("INBOX", box.uids("INBOX")[:1], "Projects")
    account = connect(box, user)
    synced(account)

    # From the conversation page, as the user does it: a non-ASCII name with atom-specials.
    thread_id = message(account, 1).thread_id
    response = logged_in_client.post(reverse("mail:thread_tags", args=[thread_id]), {"tag": "Über(alt)"})
    assert response.status_code in (200, 302)
    actions.add_tag(owner=user, messages=[message(account, 2)], name="urgent")
    keywords = server_keywords(box)
    assert keywords["INBOX"]["m1@mirror.test"] == {"&ANw-ber&ACg-alt&ACk-"}
    assert keywords["Projects"]["m1@mirror.test"] == {"&ANw-ber&ACg-alt&ACk-"}  # every place of the message
    assert keywords["INBOX"]["m2@mirror.test"] == {"urgent"}
    done = MailAction.objects.filter(kind="tag").order_by("pk")
    assert [(a.message.message_id if a.message else "", a.tag, a.status) for a in done] == [
        ("m1@mirror.test", "Über(alt)", MailActionStatus.DONE),
        ("m2@mirror.test", "urgent", MailActionStatus.DONE),
    ]
    assert "+FLAGS (&ANw-ber&ACg-alt&ACk-)" in done[0].provider_response

    # The next sync agrees: nothing changes back, and the server's spelling maps to the same tag.
    synced(account)
    assert local_tags(account) == {"m1@mirror.test": {"Über(alt)"}, "m2@mirror.test": {"urgent"}}
    assert local_tags(account) == expected_tags(box)

    # Untag: gone from both folders on the server; and a keyword spelled differently by another client
    # ("URGENT") is the same tag, so it goes too.
    box.set_flags("INBOX", box.uids("INBOX")[1:2], [b"URGENT"])
    synced(account)
    actions.remove_tag(owner=user, messages=[message(account, 1)], name="über(ALT)")
    actions.remove_tag(owner=user, messages=[message(account, 2)], name="Urgent")
    keywords = server_keywords(box)
    assert keywords["INBOX"] == {"m1@mirror.test": set(), "m2@mirror.test": set()}
    assert keywords["Projects"] == {"m1@mirror.test": set()}
    synced(account)
    assert local_tags(account) == {} == expected_tags(box)
    assert not MailTag.objects.filter(owner=user).exists()

    # Undo of an untag puts the tag back here and on the server.
    untag = MailAction.objects.filter(kind="untag", message=message(account, 2)).latest("pk")
    assert untag.status == MailActionStatus.DONE
    actions.undo_mail_action(action=untag, requested_by=user)
    assert server_keywords(box)["INBOX"]["m2@mirror.test"] == {"urgent"}  # the tag as it was spelled here
    synced(account)
    assert local_tags(account) == {"m2@mirror.test": {"urgent"}}
    assert_mirrors(box, account)


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_tag_named_like_a_protocol_keyword_stays_here_and_the_page_says_why(
    imap_mailbox: Mailbox, user: Any, logged_in_client: Client
) -> None:
    box = imap_mailbox
    box.append("INBOX", mail(1))
    account = connect(box, user)
    synced(account)
    actions.add_tag(owner=user, messages=[message(account, 1)], name="$Junk")
    action = MailAction.objects.get(kind="tag")
    assert action.status == MailActionStatus.GAVE_UP
    assert "$Junk" in action.error and "kept here only" in action.error
    assert server_keywords(box)["INBOX"]["m1@mirror.test"] == set()
    assert local_tags(account) == {"m1@mirror.test": {"$Junk"}}
    page = logged_in_client.get(reverse("mail:thread", args=[message(account, 1).thread_id])).content.decode()
    assert "kept here only" in page
    # A sync does not take it away: the server never had it and did not change.
    synced(account)
    assert local_tags(account) == {"m1@mirror.test": {"$Junk"}}


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_keywords_become_tags_of_the_mailbox_owner_only(imap_mailbox: Mailbox, dovecot: Any, user: Any) -> None:
    other_user = get_user_model().objects.create_user(username="other", email="other@example.com", password="x")
    other_box = dovecot.add_user()
    imap_mailbox.append("INBOX", mail(1), flags=[b"Mine"])
    other_box.append("INBOX", mail(1), flags=[b"Theirs"])
    mine, theirs = connect(imap_mailbox, user), connect(other_box, other_user)
    synced(mine)
    synced(theirs)
    assert set(MailTag.objects.filter(owner=user).values_list("name", flat=True)) == {"Mine"}
    assert set(MailTag.objects.filter(owner=other_user).values_list("name", flat=True)) == {"Theirs"}
    assert local_tags(mine) == {"m1@mirror.test": {"Mine"}}
    assert local_tags(theirs) == {"m1@mirror.test": {"Theirs"}}


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_without_condstore_the_full_flag_re_read_follows_keywords(
    imap_mailbox: Mailbox, user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ImapProvider, "use_condstore", False)
    box = imap_mailbox
    uid = box.append("INBOX", mail(1), flags=[b"Alpha"])
    account = connect(box, user)
    synced(account)
    box.set_flags("INBOX", [uid], [b"Alpha"], add=False)
    box.set_flags("INBOX", [uid], [b"Beta"])
    synced(account)
    assert local_tags(account) == expected_tags(box) == {"m1@mirror.test": {"Beta"}}
