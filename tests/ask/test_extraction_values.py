"""The extractive answer picks the value the question names: a value under its own label ("Host Code: …"
rather than "Participant code: …"), a length of time ("how long …"), a short line broken mid-clause, and
label-and-value lines written just above the sign-off. Each mail is written for its test, shaped like the
Enron mail where the defect was seen (bench/data/ask_questions_sixth.json)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest

from apps.ask.answer import citation_check
from apps.ask.answer_values import named_values
from apps.ask.durations import find_durations
from apps.ask.extractive import extractive_answer
from apps.ask.mailparts import forwarded_text, split_closing
from apps.ask.planner import plan_question
from apps.ask.presentation import verification_label
from apps.ask.textutil import find_dates, find_phones, find_quantities, find_times, find_values, names_days, passages
from tests.ask.test_extraction import one_mail

NOW = dt.datetime(2002, 3, 1, tzinfo=dt.UTC)


def answer_to(question: str, subject: str, body: str, *, kinds: list[str] | None = None) -> str:
    """The extractive answer to `question` from one mail; `kinds`: the answer kinds the plan must ask for."""
    plan = plan_question(question, now=NOW)
    if kinds is not None:
        assert plan.answer_types == kinds
    return extractive_answer(plan, one_mail(subject, "sender@example.com", "2002-02-27", body)).text


def test_the_value_whose_label_the_question_names_answers() -> None:
    body = (
        "The quarterly review is tomorrow at 9:00 in the large room.  The bridge for the remote offices is below.\n\n"
        "Dial-in #\t\t800.555.0142\n"
        "Host Code:\t551207 (Maria)\n"
        "Participant code:\t330914\n\n"
        "Many Thanks,\n\nJoan Pike\nx31177\n"
    )
    answer = answer_to("host code for the quarterly review bridge", "Quarterly review bridge", body)
    assert answer.startswith("Reference: **551207**") and "330914" not in answer, answer
    answer = answer_to("participant code for the quarterly review call", "Quarterly review bridge", body)
    assert "**330914**" in answer and "551207" not in answer, answer


def test_label_lines_above_the_sign_off_are_the_mails_own_text() -> None:
    body = "Here is the bridge.\n\nHost Code:\t551207\nParticipant code:\t330914\n\nThanks,\n\nJoan Pike\nx31177\n"
    own, closing = split_closing(body)
    assert "Participant code:\t330914" in own
    assert closing.split() == ["Thanks,", "Joan", "Pike", "x31177"]
    # Without a sign-off line, short lines at the end are still the closing (a signature).
    own, closing = split_closing("Please call me about the lease.\n\nJoan Pike\nEnron Property Services\n713-555-0142")
    assert own == "Please call me about the lease." and "713-555-0142" in closing


def test_a_sentence_naming_the_asked_thing_wins_when_no_kind_is_recognised() -> None:
    # "room rate" asks for no kind the vocabulary knows; the sentence whose value the question's words label
    # answers, not the one repeating the conference's name (the mail's subject) with another value.
    body = (
        "Just a reminder that the hotel cut-off date for the upcoming Gas Accounting Conference is December 21.\n"
        "For reservations call (504) 555-0199 and give the group name to receive the room rate of $149.\n"
        "Look forward to seeing you in New Orleans.\n\nRegards,\nPat\n"
    )
    question = "What's the room rate at the hotel for the Gas Accounting Conference in New Orleans?"
    answer = answer_to(question, "Gas Accounting Conference", body)
    assert "$149" in answer.splitlines()[1], answer


def test_a_line_broken_mid_clause_is_one_sentence() -> None:
    text = "The night ferry sails on Oct 7.\nDeparts at 20.45 (8:45pm) and\narrives at 06.30 (6:30am) on the 8th.\n"
    assert [p.text for p in passages(text, source="body")] == [
        "The night ferry sails on Oct 7.",
        "Departs at 20.45 (8:45pm) and arrives at 06.30 (6:30am) on the 8th.",
    ]
    # A greeting ending in a comma and a key-value line stay lines of their own.
    assert len(passages("Hi Kim,\nthanks for the note.\nDeparts: 20.45\nreturns late", source="body")) == 4


@pytest.mark.parametrize(
    ("finder", "text", "found"),
    [
        # lengths of time: a number and a unit from dateparser's language data
        (find_durations, "Over the next four to six weeks, the system will be replaced.", ["four to six weeks"]),
        (find_durations, "It takes approximately 5 days to get the results.", ["5 days"]),
        (find_durations, "Refunds take 5 business days; the call lasts 2 hours.", ["5 business days", "2 hours"]),
        (find_durations, "Die Lieferung dauert 3 Wochen.", ["3 Wochen"]),
        (find_durations, "El reembolso tarda 10 días hábiles.", ["10 días"]),
        (find_durations, "within 48 hrs of the test", ["48 hrs"]),
        (find_durations, "the 2 men came at 5 pm; room 3 am; $5 a day", []),
        # quantities: a number and what it counts
        (find_quantities, "Enrollment will be limited to 150 people on an as-registered basis.", ["150 people"]),
        (find_quantities, "South Zone: 2.75 MW +/- 10% per settlement interval", ["2.75 MW", "10%"]),
        (find_quantities, "a 17,000 square feet office in Denver", ["17,000 square feet"]),
        (find_quantities, "He weighed 8 lbs 12.5 oz at birth.", ["8 lbs", "12.5 oz"]),
        # not quantities: a count of nothing, and dates, times and amounts (their own kinds)
        (find_quantities, "we sold 3 of them at 5 pm on 3/15 for $5", []),
        # a range of like numbers; not an extension written with a dash
        (find_quantities, "indicative levels for 100-300 MW in Zone J", ["100-300 MW"]),
        (find_quantities, "call Karen at 5-4667 tomorrow; 300-100 MW", []),
        # a day of the week with an ordinal day is a date
        (find_dates, "Please return these by 4 pm, Wed, 6th.", ["Wed, 6th"]),
        (find_dates, "The family get-together is Sunday 21st at noon.", ["Sunday 21st"]),
        (find_dates, "On Monday 5 people came.", []),
    ],
)
def test_lengths_of_time_and_quantities(finder: Callable[[str], list[str]], text: str, found: list[str]) -> None:
    assert finder(text) == found


GARAGE = (
    "Central Parking is working on the gate system of the Allen Center Garage to improve its operation.  "
    "Over the next four to six weeks, the existing system will be replaced with new technology.  If you have "
    "a problem entering the garage, call the parking desk at extension 37060.\n"
)
# "how much working gas" (Enron, sixth question file): "how much" asks for an amount or a quantity
BAMMEL = (
    "We are selling the working gas in the Bammel field to AEP.  At current prices AEP would owe us "
    "somewhere around $98 million.\n\n"
    "Working gas in Bammel as of May 9: 20.3 TBTU.\n\nThanks,\nJim\n"
)


@pytest.mark.parametrize(
    ("question", "subject", "body", "kind", "headline"),
    [
        (
            "How long will the garage gate replacement take?",
            "Garage",
            GARAGE,
            "duration",
            "Duration: **four to six weeks**",
        ),
        (
            "How much working gas did Bammel have as of May 9?",
            "Working gas sale",
            BAMMEL,
            "measure",
            "Quantity: **20.3 TBTU**",
        ),
        (
            "How much will AEP owe us for the Bammel gas?",
            "Working gas sale",
            BAMMEL,
            "measure",
            "Amount: **$98 million**",
        ),
    ],
)
def test_the_asked_kind_of_value_heads_the_answer(
    question: str, subject: str, body: str, kind: str, headline: str
) -> None:
    answer = answer_to(question, subject, body, kinds=[kind])
    assert answer.startswith(headline), answer


def test_a_signature_after_a_whitespace_only_line_is_the_closing_and_never_quoted() -> None:
    # Seen on Enron: "…your assistance.\n    \nKind regards,\nIris Mack, MBA/PhD": the line of spaces between them
    # did not count as a blank line, the signature stayed in the own text, and "Iris Mack, MBA/PhD" was quoted.
    body = (
        "Hi,\n\n\t \tThe options desk is starting to make markets in spark spread options.\n\t\n\n"
        " \t   \tIt would help to meet the people on the gas desk who trade spark spread options.\n\n"
        "   \t\n\t \t Thank you in advance for your help.\n    \n"
        "Kind regards,\nIris Mack, MBA/PhD\nOptions Desk\nx3-6711\n"
    )
    own, closing = split_closing(body)
    assert "Iris Mack" not in own and closing.startswith("Kind regards,\nIris Mack, MBA/PhD"), (own, closing)
    answer = answer_to("Iris Mack spark spread options", "RE: Spark Spread Options", body)
    assert "MBA/PhD" not in answer, answer


@pytest.mark.parametrize(
    ("text", "times", "phones"),
    [
        ("Cancel by 4PM on the day of arrival to avoid a charge.", ["4PM"], []),
        ("Cameron's appointment is at 10 a.m. on Nov. 6.", ["10 a.m."], []),
        ("Call Aimee at 503.829.5405 about the listing.", [], ["503.829.5405"]),
        ("I am at home; see version 1.2.3 of the form.", [], []),
    ],
)
def test_an_hour_with_am_or_pm_is_a_time_and_a_dotted_number_a_phone(
    text: str, times: list[str], phones: list[str]
) -> None:
    assert (find_times(text), find_phones(text)) == (times, phones)


def test_what_time_is_answered_with_an_hour_written_without_minutes() -> None:
    body = (
        "Your reservation at the Market Center hotel is confirmed for Friday.  Check-in is after 3PM.\n"
        "Reservations must be cancelled by 4PM on the day of arrival to avoid a one-night charge.\n"
    )
    answer = answer_to("by what time do I have to cancel the hotel reservation?", "Reservation", body)
    assert answer.startswith("Time: **4PM**"), answer


def test_how_many_is_answered_with_the_number_of_what_the_question_counts() -> None:
    body = (
        "The ISO will offer its 3-day Market Orientation Course in Houston December 11-13 at the Hyatt.  The cost "
        "is $800.00 per person for our 12 employees who took the earlier session.\n"
        "Enrollment will be limited to 150 people on an as-registered basis, so early registration is encouraged.\n"
    )
    question = "How many people is enrollment limited to for the ISO course in Houston?"
    answer = answer_to(question, "ISO Training", body, kinds=["quantity"])
    assert answer.startswith("Quantity: **150 people**"), answer
    # "how many days" asks for a length of time, "how many dollars" for an amount
    assert plan_question("how many days does the course last?", now=NOW).answer_types == ["duration"]
    assert plan_question("how many dollars per person?", now=NOW).answer_types == ["amount"]


def test_a_day_written_with_of_before_its_month_is_a_date() -> None:
    assert find_dates("the notice will be served on the 19th of November") == ["19th of November"]
    assert find_dates("we sold 3 of them") == []


def test_a_bare_number_named_by_the_questions_words_is_the_reference_asked_for() -> None:
    body = (
        "I am going through the February balances and have a question.  We have sale deal 618840 which is for "
        "contract 5040-82-42, priced in 2001 at index.  The purchase side is fine.\n"
    )
    answer = answer_to("What is the sale deal number for contract 5040-82-42?", "Consumers 2/01", body)
    assert answer.startswith("Reference: **618840**"), answer
    # a number no word of the question names is no reference
    answer = answer_to("What is the invoice number for the February balances?", "Consumers 2/01", body)
    assert "**618840**" not in answer, answer


def test_the_verification_label_counts_only_values_the_answer_quotes() -> None:
    # The answer names the cited mail by subject and date; those name it and are not checked claims, so an
    # answer quoting no value says nothing was verified instead of "1 value found in [1]" (the mail's date).
    plan = plan_question("Aggie night golf cart trailer", now=NOW)
    body = "Nobby tires and the lift kit can be done at the shop.\nTrailer issues per Chris, towing it is tricky.\n"
    evidence = one_mail("Aggie Night at the field - June 15", "sender@example.com", "2002-02-27", body)
    answer = extractive_answer(plan, evidence)
    assert "2002-02-27" in answer.text and "June 15" in answer.text
    assert verification_label({"citation_check": citation_check(answer.checked_text(), evidence)}) == ""
    body += "Pick-up is at 7:35 a.m. on Saturday.\n"
    evidence = one_mail("Aggie Night at the field - June 15", "sender@example.com", "2002-02-27", body)
    answer = extractive_answer(plan_question("when is the golf cart trailer pick-up", now=NOW), evidence)
    check = citation_check(answer.checked_text(), evidence)
    assert verification_label({"citation_check": check}) == "1 value found in [1]", answer.text


def test_the_verification_label_says_when_no_found_value_is_of_the_asked_kind() -> None:
    """Issue 35, item 4: "2 values found" on an answer that quotes dates when an amount was asked reads as a
    checked answer; the label says none of them is the kind asked for."""
    body = "Your order ships on 14 March 2026 and arrives by 18 March 2026.\n"
    evidence = one_mail("Order update", "shop@example.com", "2026-03-10", body)
    check = citation_check("It ships on 14 March 2026 and arrives by 18 March 2026 [1].", evidence)
    assert check["found_kinds"] == ["date"]
    asked_amount = plan_question("how much did the order cost?", now=NOW).as_json()
    asked_date = plan_question("when does the order arrive?", now=NOW).as_json()
    assert "amount" in asked_amount["answer_types"] and "date" in asked_date["answer_types"]
    assert verification_label({"citation_check": check}, asked_amount) == (
        "2 values found in [1], but none is an amount as the question asks"
    )
    assert verification_label({"citation_check": check}, asked_date) == "2 values found in [1]"


def test_a_forwarded_header_under_a_short_reply_is_never_quoted() -> None:
    body = (
        "old one. thanks!.\n\n-----Original Message-----\nFrom: Bass, Eric\n"
        "Sent: Tuesday, January 22, 2002 10:00 AM\nTo: Buckley, Karen\nSubject: RE: Application Forms\n\n\n"
        "Is this the old building or the new one?\n"
    )
    own, _closing = split_closing(body)
    assert "Sent:" not in own and "Is this the old building or the new one?" in own, own
    answer = answer_to("when are the application forms due back", "RE: Application Forms", body)
    assert "Sent:" not in answer, answer


def test_a_question_word_right_after_a_value_labels_it() -> None:
    # "which payroll will the holiday pay go out on": "the June 15th payroll" (Enron, tenth question file)
    sentence = "They have all been set up for payment on the June 15th payroll."
    assert named_values(sentence, ["June 15th"], {"payroll"}) == 1
    assert named_values(sentence, ["June 15th"], {"holiday"}) == 0
    assert named_values("Host Code: 551207, Participant code: 330914", ["330914"], {"host", "code"}) == 1


def test_a_lotus_notes_header_block_is_never_quoted() -> None:
    # Notes writes the replied-to message's header as a table: labels in a column of their own after a gap.
    body = (
        "Good question.  I will ask Kirk about the exchange's web site first thing tomorrow and get back to you.\n\n"
        "Sheri Righi\nHuman Performance\n\n\n\n"
        "            dutch.quigley@example.c\n"
        "            om                           To:     Sheri Righi/Internal@Example\n"
        "                                         cc:\n"
        "            10/15/2001 06:24 PM          Subject:     RE: Weekly Assignment: Due 10/19/01\n\n\n\n"
        "How much of the assignment can be taken from the exchange's web site?  Can we copy it over?\n\ndq\n"
    )
    own, closing = split_closing(body)
    assert "Subject:" not in own and "Subject:" not in closing and own.startswith("Good question."), (own, closing)
    history = forwarded_text(body)
    assert "Subject:" not in history and "How much of the assignment can be taken" in history, history
    answer = answer_to("when is the weekly assignment due", "RE: Weekly Assignment: Due 10/19/01", body)
    assert "Subject:" not in answer and "06:24 PM" not in answer, answer


def test_an_initialism_ends_no_sentence() -> None:
    line = (
        "We cordially invite you to a forum for the market's traders jointly hosted by two of its members, on "
        "Friday, November 9th, 1:00 - 5:00 p.m. CST.  The forum is intended for traders, asset managers and "
        "schedulers with a stake in the market's success.  Please reply by Monday."
    )
    assert [p.text for p in passages(line, source="body")] == [
        "We cordially invite you to a forum for the market's traders jointly hosted by two of its members, on "
        "Friday, November 9th, 1:00 - 5:00 p.m. CST.",
        "The forum is intended for traders, asset managers and schedulers with a stake in the market's success.",
        "Please reply by Monday.",
    ]
    # nor does one capital before a name: a middle initial, a street's direction
    line = (
        "Once I pick out the piece for the class gift, you will be able to take your child to the Clay Owl, "
        "2210B W. Alabama, any day next week to do their thumbprints.  John R. Hale will have the glaze ready "
        "for all of them by then, and the plates will be fired and wrapped in time for the last day of school.  "
        "Thanks."
    )
    assert [p.text for p in passages(line, source="body")][:2] == [
        "Once I pick out the piece for the class gift, you will be able to take your child to the Clay Owl, "
        "2210B W. Alabama, any day next week to do their thumbprints.",
        "John R. Hale will have the glaze ready for all of them by then, and the plates will be fired and wrapped "
        "in time for the last day of school.",
    ]


@pytest.mark.parametrize(
    ("word", "is_date"),
    [("Nov-Jan", True), ("Wednesday", True), ("Sept.", True), ("Ergoform", False), ("Mann", False), ("Jan-X", False)],
)
def test_month_and_weekday_names_are_no_names_a_mail_must_mention(word: str, is_date: bool) -> None:
    # "DumbBells membership dues per person for Nov-Jan" was refused: "the best match does not mention Nov-Jan"
    assert names_days(word) is is_date


def test_a_sentence_after_a_phone_line_keeps_the_line_in_the_mails_own_text() -> None:
    # Enron, thirteenth question file: the last sentence had been taken for a disclaimer, and the line above
    # it, with the call's code, for a signature, where only a phone number is looked for.
    body = (
        "All, please see the telephone number for the budget conference call with its conference code, "
        "Tuesday, Dec. 11th, 2001 at 1:00 PM.\n\n"
        "\t(877) 555-0188        Code No. 730164\n\n"
        "Any questions, please call Ann Rowe (505) 555-0123 or Tim Lane (505) 555-0147.\n"
    )
    own, closing = split_closing(body)
    assert "Code No. 730164" in own and "Any questions" in own and closing == "", (own, closing)
    answer = answer_to("conference code for the budget call", "Budget Meeting Conference Call", body)
    assert answer.startswith("Reference: **730164**"), answer
    # A name under a sign-off is still the closing, and so is a long disclaimer after a signature.
    own, closing = split_closing("The lease is signed.\n\nRegards,\n\nKaren.")
    assert own == "The lease is signed." and "Karen." not in own
    disclaimer = " ".join(["This message may contain confidential information for the intended recipient."] * 3)
    own, closing = split_closing(f"The lease is signed.\n\nKaren Lowe\nProperty Services\n\n{disclaimer}")
    assert own == "The lease is signed." and "Karen Lowe" in closing


def test_a_number_touching_a_date_is_no_international_prefix() -> None:
    # "December 20+21 281-358-8576" had given the phone number "+21 281-358-8576".
    assert find_phones("December 20+21 281-358-8576") == ["281-358-8576"]
    assert find_phones("Call +90 212 555 0142 on May 5") == ["+90 212 555 0142"]


def test_a_model_name_or_a_year_before_a_name_is_no_quantity() -> None:
    # "How much did he pay for the 1996 Porsche 993 C4S?" was answered "Quantity: 4S" (Enron, fourteenth file).
    assert find_quantities("The attached are the pictures of the 1996 Carrera 4S.") == []
    assert find_quantities("a 3D model, 2000 MW of capacity and 150 people") == ["2000 MW", "150 people"]


def test_a_number_in_groups_of_thousands_answers_how_much_when_no_amount_is_written() -> None:
    body = (
        "i picked it up last night for 82,000\n -----Original Message-----\nFrom: \tEd Chan <ed@example.com>\n"
        "Sent:\tWednesday, January 23, 2002 3:27 PM\nTo:\tZammit, John\nSubject:\t1996 Porsche 993 C4S\n\n\n"
        "Hi John,\n\n\nThe attached are the pictures of the 1996 Carrera 4S.\n\n\nIf you need more pics, please call"
        " us again.\n\nEd Chan\n\n" + "".join(f" - DSCN01{n}.JPG \n" for n in range(10, 22))
    )
    answer = answer_to("How much did Zammit pay for the 1996 Porsche 993 C4S?", "FW: 1996 Porsche 993 C4S", body)
    assert "I found no amount or quantity I could recognise" in answer, answer
    assert answer.split("\n")[1] == "“i picked it up last night for 82,000” [1]", answer


def test_a_question_naming_a_period_still_asks_for_a_date() -> None:
    # "the October 16-31 pay period" names no day: "when are timesheets due" asks for the day, not the hour.
    body = "Timesheets for the Oct. 16-31 pay period are due on October 31.  Please send them by 3 pm.\n"
    answer = answer_to("When are timesheets due for the October 16-31 pay period?", "Timesheets", body)
    assert answer.startswith("Date: **October 31**"), answer
    answer = answer_to("When are timesheets due on October 31?", "Timesheets", body)
    assert answer.startswith("Time: **3 pm**"), answer


def test_a_time_under_a_label_naming_a_place_is_not_the_labelled_answer() -> None:
    # An Outlook invitation (Enron, fourteenth file): "What time is the lunch …" had quoted the "Where:" line.
    body = (
        "When: Tuesday, October 30, 2001 11:30 AM-1:00 PM (GMT-06:00) Central Time (US & Canada).\n"
        "Where: Reservations set for 11:30\n\n*~*~*~*~*~*~*~*~*~*\n\nLunch at Kobe's for the team, my treat.\n"
    )
    answer = answer_to("What time is the Kobe's lunch Greg set up?", "Updated: Lunch Kobe's", body)
    assert answer.startswith("Time: **11:30 AM**, **1:00 PM** [1]"), answer
    assert find_times("(GMT-06:00) or UTC+05:30") == [] and find_times("11:30 AM-1:00 PM") == ["11:30 AM", "1:00 PM"]


def test_a_time_zone_offset_is_no_reference() -> None:
    # "OASIS number for the WR to MDEA schedule" had been answered "Reference: GMT-06" from an invitation.
    assert find_values("identifier", "When: Wednesday, October 31, 2001 11:00 AM-1:00 PM (GMT-06:00) Central") == []
    assert find_values("identifier", "OASIS 1025604 for the WR to MDEA schedule, tag GMT-0612A") == ["GMT-0612A"]
