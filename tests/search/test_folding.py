# ruff: noqa: RUF001 -- Turkish and German text is what these tests are about.
"""Folding, query parsing and snippets: pure functions shared by both backends."""

from __future__ import annotations

import pytest

from apps.search.folding import fold, fold_tokens, highlight, parse_query


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("Son Ödeme Tarihi", "Son Odeme Tarihi"),
        ("ışık İSTANBUL ŞUBESİ ağustos çiğdem", "isik ISTANBUL SUBESI agustos cigdem"),
        ("Straße Grüße ẞ", "Strasse Grusse SS"),
        ("Øresund Æble Œuvre Łódź Þór", "Oresund AEble OEuvre Lodz THor"),
        ("naïve café résumé Ångström", "naive cafe resume Angstrom"),
        ("plain ascii stays", "plain ascii stays"),
    ],
)
def test_fold(text: str, folded: str) -> None:
    assert fold(text) == folded


def test_tokens_split_addresses_and_numbers_like_the_index() -> None:
    assert fold_tokens("Jeff.Skilling@Enron.com, 15.03.2024 e-mail_x") == [
        "jeff",
        "skilling",
        "enron",
        "com",
        "15",
        "03",
        "2024",
        "e",
        "mail",
        "x",
    ]


def test_parse_query_variants_phrases_and_prefix() -> None:
    parsed = parse_query('Müller "son ödeme" jeff.skilling@enron.com gruesse stra', prefix_last=True)
    assert [t.variants for t in parsed.terms] == [("muller", "mueller"), ("gruesse", "grusse"), ("stra",)]
    assert parsed.terms[-1].prefix and not parsed.terms[0].prefix
    assert parsed.phrases == [["son", "odeme"], ["jeff", "skilling", "enron", "com"]]
    assert [t.primary for t in parse_query("when is my credit card payment due").any_word_terms()] == [
        "credit",
        "card",
        "payment",
        "due",
    ]
    assert parse_query("  ").is_empty
    assert parse_query('"" ()*:').is_empty


def test_highlight_marks_original_spelling_and_escapes_html() -> None:
    text = "<b>Hi</b> — Herr Müller wohnt in der Hauptstraße 5. " + "Filler text. " * 40 + "Müller again."
    snippet = highlight(text, parse_query("mueller hauptstrasse"))
    assert "<mark>Müller</mark>" in snippet and "<mark>Hauptstraße</mark>" in snippet
    assert "&lt;b&gt;Hi&lt;/b&gt;" in snippet
    assert "<b>" not in snippet
    assert snippet.endswith("…")


def test_highlight_without_matches_shows_the_start() -> None:
    assert highlight("Short body.", parse_query("absent")) == "Short body."
    assert highlight("Short body.", None) == "Short body."
