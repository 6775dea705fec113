"""Questions asking for a place or a person ("where …", "who …", "which hotel …"): the extractive answer
quotes the sentence naming one the question does not give, found from capitalisation alone (apps/ask/names.py).
Each mail is written for its test, shaped like the Enron mail where the answer was missed
(bench/data/ask_questions_*.json)."""

from __future__ import annotations

import pytest

from apps.ask.fields import label_asks_name
from apps.ask.mailparts import split_closing
from apps.ask.names import name_spans, new_names
from apps.ask.textutil import find_amounts, passages
from apps.ask.vocabulary import answer_types_of
from tests.ask.test_extraction_values import answer_to


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("We play at the Riverside Club which is right by the Arena.", ["Riverside Club", "Arena"]),
        ("Where: The Copper Kettle Tavern (directions below)", ["The Copper Kettle Tavern"]),
        ("Let's meet at St. Pete's Blue Heron Grill.", ["St. Pete's Blue Heron Grill"]),
        ("2218 North Larchmont", ["2218 North Larchmont"]),
        (
            "1200 Smith Street, Suite 3400, Houston, Texas 77002",
            ["1200 Smith Street, Suite 3400, Houston, Texas 77002"],
        ),
        ("BAYVIEW HARBOR INN", ["BAYVIEW HARBOR INN"]),
        # a sentence's capitalised first word alone is no name; a period after a longer word ends the name
        ("Thanks for coming. We traveled to the town of Vellore.", ["Vellore"]),
        ("We said goodbye to Ana Ruiz. Ana is moving to El Paso.", ["Ana Ruiz", "El Paso"]),
        # the words of a date are the date's
        ("The meeting is on Wednesday, January 23 in the board room.", ["Wednesday"]),
        ("Wir treffen uns in der Lindenstraße 5 in Köln.", ["Lindenstraße 5", "Köln"]),
    ],
)
def test_names_are_runs_of_capitalised_words(text: str, names: list[str]) -> None:
    assert [name for _start, _end, name in name_spans(text)] == names


def test_the_names_the_question_gives_are_not_new() -> None:
    known = ["Who do I call if I can't reach John Crespo?", "Drafting committee"]
    text = "If I am out, call John Crespo or Nadia Ferro at 555 0142."
    assert new_names(text, known) == (["Nadia Ferro"], {"nadia", "ferro"})


def test_where_is_answered_by_the_sentence_naming_the_place() -> None:
    body = (
        "Please join us this Wednesday night to say goodbye to Ana Ruiz and Tom Webb.  Ana is moving to Denver "
        "and Tom has accepted a job with another company.\n\n"
        "Time: drop by when you can, beginning around 5:30\n"
        "Where: The Copper Kettle Tavern (directions below)\n\n"
        "Take the Katy Freeway west and exit at Mason Road.\n"
    )
    question = "Where is the goodbye happy hour for Ana Ruiz and Tom Webb?"
    answer = answer_to(question, "Happy hour for Ana and Tom", body, kinds=["name"])
    assert "The Copper Kettle Tavern" in answer, answer


def test_which_hotel_prefers_the_longer_new_name_over_a_phone_line() -> None:
    body = (
        "Kim,\n\nHere is the confirmation for your hotel in Boston.\n\n"
        "-----Original Message-----\nFrom: reservations@harborview.example\nSent: Monday, August 20, 2001 9:36 AM\n"
        "To: Kim\nSubject: Reservation #5521009\n\n"
        "Thank you for choosing Harborview Hotels.\nWe look forward to having you as our guest.\n\n"
        "Confirmation Number: 5521009\n\n"
        "Hotel Address: BOSTON HARBORVIEW GRAND\n               80 Atlantic Avenue\n               Boston, MA 02110\n"
        "Hotel Phone: 1/617/555-0190\n\n"
        "Your reservation is guaranteed for late arrival.  Should you need to cancel, please call us before 4pm.\n"
    )
    answer = answer_to("Which hotel am I booked at for the Boston trip?", "FW: Reservation #5521009", body)
    assert "BOSTON HARBORVIEW GRAND" in answer.splitlines()[1], answer


def test_who_is_answered_by_the_person_the_question_does_not_name() -> None:
    body = (
        "We will meet in Alexandria on November 12 from 10 to 4.  John Crespo has offered to host the meeting.\n\n"
        "If you cannot reach John at his office, please call Nadia Ferro (703 555 0142) or try his cell.\n"
    )
    answer = answer_to("Who should I call if I can't reach John Crespo for the November 12 meeting?", "Meeting", body)
    assert "Nadia Ferro" in answer, answer


def test_a_heading_over_its_one_line_value_labels_it() -> None:
    text = "Date & Time\nSaturday November 3rd at noon.\n\nWhere\n2218 North Larchmont in Bellaire\n\nSee you there!"
    assert [(p.text, p.heading) for p in passages(text, source="body")] == [
        ("Date & Time", ""),
        ("Saturday November 3rd at noon.", "Date & Time"),
        ("Where", ""),
        ("2218 North Larchmont in Bellaire", "Where"),
        ("See you there!", ""),
    ]
    body = (
        "The cook-off is back this year, with six teams.\n\n"
        "Date & Time\nSaturday November 3rd.  We fire the grills up around noon, judging is at 3.\n\n"
        "Where\n2218 North Larchmont in Bellaire\n\n"
        "Directions (from Jim himself)\nFrom downtown, take 59 south to 610 south and exit at Bissonnet.  "
        "The house is the third on the right.\n\nSee you there!\n"
    )
    answer = answer_to("What's the address for the cook-off at Jim's place in Bellaire?", "COOK-OFF", body)
    assert "2218 North Larchmont" in answer, answer


def test_a_location_field_names_a_place() -> None:
    # Enron, thirteenth question file: "Where was the ETX mock test moved to …" was answered with numbered
    # notes naming the system, not the "Location: We are moving the location … to ECS 05442" line.
    [line] = passages("Location:  We are moving the location from the 12th floor labs to ECN 0871", source="body")
    assert label_asks_name(line)
    assert answer_types_of("what location was the dry run moved to") == ["name"]
    [line] = passages("Timeframe: starting at 9am, completion at 3pm", source="body")
    assert not label_asks_name(line)


def test_label_lines_without_a_sign_off_are_the_mails_own_text() -> None:
    body = (
        "The following is contact information for Ian Shaw.\n\n"
        "Email address:  ian.shaw@example.com\n\n"
        "Business and home number:  011-44-1632-960-118\n\n"
        "Cell Number:  011-44-7700-9001-22\n"
    )
    own, closing = split_closing(body)
    assert "Cell Number:  011-44-7700-9001-22" in own and not closing
    answer = answer_to("Ian Shaw's cell number", "Contact information for Ian Shaw", body)
    assert answer.startswith("Phone: **011-44-7700-9001-22**"), answer
    # A signature starts with a name line: it stays the closing.
    own, closing = split_closing("See the attached plan.\n\nJoan Pike\nPhone: 713-555-0142\nFax: 713-555-0143\n")
    assert own == "See the attached plan." and "Joan Pike" in closing


def test_an_amount_aligned_in_a_table_column() -> None:
    assert find_amounts("Gas Performance Upgrades\t$   800,000") == ["$   800,000"]


def test_a_place_written_as_a_block_of_short_lines_is_quoted_whole() -> None:
    body = (
        "I will be out of the office from the 6th to the 13th, and will check mail when I can.\n\n"
        "HARBOR LIGHTS LODGE\nP.O. Box 41\nCaye Verde, Belize\nCentral America\n\n"
        "For anything urgent on the Midwest book, please call Dana Lowe at extension 3-5512 in my absence.\n\n"
        "Thanks,\nRavi\n"
    )
    answer = answer_to("Where is Ravi staying in Belize?", "Out of office - contact info", body, kinds=["name"])
    assert "HARBOR LIGHTS LODGE" in answer and "Caye Verde, Belize" in answer, answer


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("Who is the contact at Midland Power?", ["name"]),
        ("So where is the offsite this year?", ["name"]),
        # "who" inside the question is a relative word, not what it asks
        ("Which payroll will the holiday pay go out on for the people who worked Memorial Day?", []),
        # another kind asked for wins: "where" only says which resort
        ("what's the phone number of the resort where we stay?", ["phone"]),
    ],
)
def test_where_and_who_ask_for_a_name_only_as_the_question_opens(question: str, kinds: list[str]) -> None:
    assert answer_types_of(question) == kinds
