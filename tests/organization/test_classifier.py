"""The folder classifier's evidence, each kind alone: a reply goes to its thread's folder, a known sender's mail to
where that sender's mail is filed, a folder of two files wins by its nearest neighbours, a decision is learned
incrementally, a file that shares nothing with the library has no evidence, and on a real filing stream the
suggestions beat an online naive Bayes while staying precise."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest

from apps.organization.classifier import FolderClassifier
from apps.organization.filing_samples import FEATURES, Sample, make_sample, thread_subject
from bench.organize import TARBALL


def mail(
    subject: str,
    body: str,
    *,
    sender: str,
    folder: str = "",
    message_id: str = "",
    in_reply_to: str = "",
    date: str = "2001-05-01T10:00:00+00:00",
) -> Sample:
    metadata = {
        "title": subject,
        "sender": sender,
        "recipients": ["me@example.org"],
        "message_id": message_id,
        "in_reply_to": in_reply_to,
        "date": date,
        "attachments": [],
    }
    return make_sample(name="m.eml", text=f"Subject: {subject}\n\n{body}", metadata=metadata, folder=folder)


def library() -> list[Sample]:
    samples = []
    for n in range(8):
        samples.append(
            mail(
                f"Pipeline capacity report {n}",
                "Gas pipeline capacity nominations and volumes for the week.",
                sender=f"ops{n}@pipeline.example",
                folder="pipeline",
                message_id=f"p{n}@x",
            )
        )
        samples.append(
            mail(
                f"Team lunch {n}",
                "Lunch on Friday with the team, restaurant booking and menu.",
                sender=f"friend{n}@mail.example",
                folder="social",
                message_id=f"s{n}@x",
            )
        )
    samples.append(
        mail(
            "Rate case filing schedule",
            "Tariff rate case filing and the regulator's schedule.",
            sender="counsel@law.example",
            folder="regulatory",
            message_id="r0@x",
        )
    )
    samples.append(
        mail(
            "Rate case testimony draft",
            "Draft testimony for the tariff rate case hearing.",
            sender="counsel@law.example",
            folder="regulatory",
            message_id="r1@x",
        )
    )
    return samples


def test_thread_subject_drops_reply_and_forward_prefixes_of_any_language() -> None:
    assert thread_subject("RE: Fw: AW:  Budget 2001") == "budget 2001"
    assert thread_subject("SV: Budget 2001") == thread_subject("budget 2001")
    assert thread_subject("Q3 2001: results") == "q3 2001: results"  # a digit: not a prefix


def test_a_reply_goes_to_its_threads_folder_though_its_words_point_elsewhere() -> None:
    classifier = FolderClassifier().fit(library())
    # The words are the social folder's; the reply links to a filed regulatory mail by Message-ID and subject.
    reply = mail(
        "RE: Rate case filing schedule",
        "Lunch on Friday with the team?",
        sender="someone@new.example",
        in_reply_to="r0@x",
    )
    prediction = classifier.predict(reply)
    assert prediction.top is not None and prediction.top[0] == "regulatory", prediction.ranked
    assert any("reply to a mail filed there" in e or "thread" in e for e in prediction.evidence), prediction.evidence
    # Without the thread the same words go to social: the thread was the evidence.
    alone = classifier.predict(mail("Question", "Lunch on Friday with the team?", sender="someone@new.example"))
    assert alone.top is not None and alone.top[0] == "social"


def test_a_known_senders_mail_goes_where_that_sender_is_filed() -> None:
    classifier = FolderClassifier().fit(library())
    neutral = mail("Quick question", "Can we talk tomorrow morning?", sender="counsel@law.example")
    prediction = classifier.predict(neutral)
    assert prediction.top is not None and prediction.top[0] == "regulatory", prediction.ranked
    assert prediction.known_keys >= 1 and prediction.has_evidence
    assert any("counsel@law.example" in e for e in prediction.evidence), prediction.evidence


def test_a_senders_mail_goes_where_it_went_lately_not_where_most_of_it_went() -> None:
    samples = library()
    # Twenty older mails from the clerk were filed under social, the three latest under regulatory; meanwhile,
    # in August, other people's mail filled social too, so the period around a new mail also says social.
    for n in range(20):
        date = f"2001-0{n % 6 + 1}-{n + 2:02d}T10:00:00+00:00"
        samples.append(mail(f"Note {n}", "Short note.", sender="clerk@court.example", folder="social", date=date))
    for n in range(3):
        date = f"2001-08-0{n + 1}T10:00:00+00:00"
        samples.append(mail(f"Memo {n}", "Short memo.", sender="clerk@court.example", folder="regulatory", date=date))
    for n in range(8):
        date = f"2001-08-1{n}T10:00:00+00:00"
        samples.append(
            mail(f"Lunch {n}", "Lunch on Friday.", sender=f"friend{n}@mail.example", folder="social", date=date)
        )
    classifier = FolderClassifier().fit(samples)
    question = ("Quick question", "Can we talk tomorrow morning?")
    later = mail(*question, sender="clerk@court.example", date="2001-08-20T10:00:00+00:00")
    prediction = classifier.predict(later)
    assert prediction.top is not None and prediction.top[0] == "regulatory", prediction.ranked
    # The same mail dated among the older ones goes with them.
    earlier = mail(*question, sender="clerk@court.example", date="2001-03-03T10:00:00+00:00")
    assert dict(classifier.predict(earlier).ranked)["regulatory"] < dict(prediction.ranked)["regulatory"]


def test_a_folder_of_two_files_wins_by_its_nearest_neighbours() -> None:
    classifier = FolderClassifier().fit(library())
    hearing = mail("Hearing", "Draft testimony for the tariff rate case hearing, second round.", sender="x@y.example")
    prediction = classifier.predict(hearing)
    assert prediction.top is not None and prediction.top[0] == "regulatory", prediction.ranked
    assert prediction.top[1] > 0.5


def test_each_of_the_top_three_folders_says_what_points_to_it() -> None:
    """The alternatives shown when the suggestion abstains: each of the three best folders with its own evidence
    (a known sender for one, the filed file it is most like for another), not only the top folder's."""
    classifier = FolderClassifier().fit(library())
    # The regulatory folder's sender writing about the social folder's lunch: two folders have a claim.
    mixed = mail("Friday", "Lunch on Friday with the team, restaurant booking?", sender="counsel@law.example")
    prediction = classifier.predict(mixed)
    top3 = [folder for folder, _ in prediction.ranked[:3]]
    assert list(prediction.evidence_by_folder) == top3, (prediction.evidence_by_folder, prediction.ranked)
    assert prediction.evidence[0] == prediction.evidence_by_folder[top3[0]][0]
    regulatory, social = prediction.evidence_by_folder["regulatory"], prediction.evidence_by_folder["social"]
    assert any("counsel@law.example" in e for e in regulatory), regulatory
    assert not any("counsel@law.example" in e for e in social), social
    assert any(e.startswith("most like “Team lunch") for e in social), social
    assert any(e.startswith("shared words:") and "lunch" in e for e in social), social
    assert not any("lunch" in e for e in regulatory), regulatory


def test_nothing_in_common_means_no_evidence() -> None:
    classifier = FolderClassifier().fit(library())
    prediction = classifier.predict(make_sample(name="scan.txt", text="zxqv wplk", metadata={}))
    assert not prediction.has_evidence and prediction.known_words == 0
    assert abs(sum(p for _, p in prediction.ranked) - 1.0) < 1e-6


def test_a_decision_is_learned_incrementally_with_the_same_evidence_as_a_full_fit() -> None:
    samples = library()
    classifier = FolderClassifier().fit(samples)
    decision = mail(
        "Rate case settlement",
        "Settlement terms for the tariff rate case.",
        sender="counsel@law.example",
        folder="regulatory",
        message_id="r2@x",
    )
    updated = classifier.update([*samples, decision])
    assert updated.incremental and updated.words is classifier.words and updated is not classifier
    assert updated.counts["regulatory"] == 3 and classifier.counts["regulatory"] == 2  # the old one untouched
    probe = mail("Settlement", "Settlement terms for the tariff rate case.", sender="new@z.example")
    # The same vocabulary and weights, every table rebuilt from scratch: the evidence must agree exactly.
    refitted = copy.copy(updated)
    refitted._index([*samples, decision])
    incremental = dict(updated.predict(probe).ranked)
    full = dict(refitted.predict(probe).ranked)
    assert incremental.keys() == full.keys()
    for folder, confidence in full.items():
        assert abs(incremental[folder] - confidence) < 1e-6, (folder, incremental, full)
    # A removed file makes the tables rebuild (a file moved out of the library is no evidence any more).
    shrunk = updated.update([*samples[1:], decision])
    assert shrunk.trained_on == len(samples)


def _embedded(samples: list[Sample]) -> list[Sample]:
    """The samples with their embeddings from the configured local embedder, as the app attaches them."""
    from apps.organization.filing_samples import embedding_text
    from apps.search.embedders import get_embedder

    rows = get_embedder().embed_documents([embedding_text(s) for s in samples])
    for sample, row in zip(samples, rows, strict=True):
        sample.embedding = row
    return samples


def test_the_embedder_finds_a_small_folder_for_a_file_worded_unlike_it() -> None:
    """Shared meaning without shared words: the TF-IDF evidence has nothing, the embedder's nearest files do."""
    samples = _embedded(library())
    probe = mail("Utility commission", "Witness statements before the utility commission", sender="x@y.example")
    plain = FolderClassifier().fit([copy.copy(s) for s in samples])
    [embedded_probe] = _embedded([copy.copy(probe)])
    with_embeddings = FolderClassifier().fit(samples)
    before = dict(plain.predict(probe).ranked)["regulatory"]
    after = dict(with_embeddings.predict(embedded_probe).ranked)["regulatory"]
    assert after > before, (before, after)
    # Without its own embedding the file still gets the other evidence: the same as without the embedder.
    assert abs(dict(with_embeddings.predict(probe).ranked)["regulatory"] - before) < 0.2


def test_embedding_evidence_is_the_same_learned_incrementally_or_rebuilt() -> None:
    samples = _embedded(library())
    classifier = FolderClassifier().fit(samples)
    first = samples[0].embedding
    assert first is not None and classifier.embedded.all() and classifier.embedding_dimension == len(first)
    [decision] = _embedded(
        [
            mail(
                "Rate case settlement",
                "Settlement terms for the tariff rate case.",
                sender="counsel@law.example",
                folder="regulatory",
                message_id="r2@x",
            )
        ]
    )
    updated = classifier.update([*samples, decision])
    assert updated.incremental and updated.embedded.sum() == len(samples) + 1
    refitted = copy.copy(updated)
    refitted._index([*samples, decision])
    [probe] = _embedded([mail("Settlement", "Settlement terms for the tariff rate case.", sender="new@z.example")])
    incremental, full = dict(updated.predict(probe).ranked), dict(refitted.predict(probe).ranked)
    for folder, confidence in full.items():
        assert abs(incremental[folder] - confidence) < 1e-6, (folder, incremental, full)
    # Leave-one-out leaves the file out of its own neighbours and centroid: a folder of one file has no evidence.
    features, mask, labels = classifier.leave_one_out_evidence()
    assert len(labels) == len(samples) and mask.all()
    column = list(FEATURES).index("embedding_nearest")
    assert (features[..., column] < 0.999).all()  # never the file itself (cosine 1)


def _enron_available() -> bool:
    if TARBALL.is_file():
        return True
    if os.environ.get("CI") == "true":
        raise AssertionError(f"{TARBALL} is missing: CI must have the real filing data")
    return False


def test_on_a_real_filing_stream_beats_naive_bayes_and_stays_precise(tmp_path: Path) -> None:
    """Enron davis-d and stepenovitch-j (not held out for the independent evaluation): the earlier half of their
    filing as the library, the later half arriving in date order, each decision learned before the next mail, as
    the app does. Measured (bench/filing_streams.py, 139 decisions): the classifier before the embedder and
    recent-sender evidence 0.835 online accuracy, this one 0.849, naive Bayes 0.799."""
    if not _enron_available():
        pytest.skip(f"real filing data absent ({TARBALL}); CI=true makes this a failure")
    from bench.filing_streams import Tally, digest_stream, replay_app, replay_naive_bayes
    from bench.organize import filing_streams, read_enron

    app, naive_bayes = Tally(), Tally()
    for user, mails in filing_streams(read_enron(users={"davis-d", "stepenovitch-j"})).items():
        arrivals = digest_stream(user, mails, tmp_path)
        app.add(replay_app(arrivals, threshold=0.8, retrain_every=1))
        naive_bayes.add(replay_naive_bayes(arrivals, alpha=0.1))
    ours, theirs = app.row(), naive_bayes.row()
    assert app.decisions >= 130
    # More often right than naive Bayes, which never abstains, though ours abstains when unsure (the margin is
    # what was measured, less one decision: the classifier before the embedder evidence fell short of it), and
    # far more often right when confident.
    assert ours["accuracy"] >= theirs["accuracy"] + 0.04, (ours, theirs)
    assert ours["precision"] >= 0.9 and ours["prec@0.8"] >= theirs["prec@0.8"] + 0.1, (ours, theirs)
    assert ours["top3"] >= 0.95, ours
    assert ours["ece"] < 0.1, ours
