"""Text folding, query parsing and snippet highlighting shared by every backend.

Folding maps letters to the ASCII spelling people type when they lack the keyboard: Turkish ı/İ/ş/ğ/ç,
German ß and umlauts, Scandinavian ø/æ, Polish ł and every precomposed Latin letter with a diacritic.
The same fold is applied to indexed text and to queries, so "Son Odeme Tarihi" finds "Son Ödeme
Tarihi" and the other way round. German also writes umlauts as ae/oe/ue ("Mueller"); that is handled on
the query side only, by searching both spellings of a word (see `term_variants`).
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

# Letters that Unicode does not decompose into base letter + combining mark.
_SPECIAL_FOLDS = {
    "ß": "ss",
    "ẞ": "SS",
    "ı": "i",
    "ø": "o",
    "Ø": "O",
    "æ": "ae",
    "Æ": "AE",
    "œ": "oe",
    "Œ": "OE",
    "ł": "l",
    "Ł": "L",
    "đ": "d",
    "Đ": "D",
    "ð": "d",
    "Ð": "D",
    "þ": "th",
    "Þ": "TH",
    "ħ": "h",
    "Ħ": "H",
    "ŧ": "t",
    "Ŧ": "T",
    "ŀ": "l",
    "Ŀ": "L",
    "ĸ": "k",
    "ſ": "s",
    "ﬀ": "ff",
    "ﬁ": "fi",
    "ﬂ": "fl",
    "ﬃ": "ffi",
    "ﬄ": "ffl",
    "ﬅ": "st",
    "ﬆ": "st",
}

# Latin-1 Supplement through Latin Extended-B, IPA-free; plus Latin Extended Additional (Vietnamese etc.).
_LATIN_RANGES = ((0x00C0, 0x0250), (0x1E00, 0x1F00))


@lru_cache(maxsize=1)
def _fold_table() -> dict[int, str]:
    table: dict[int, str] = {}
    for start, end in _LATIN_RANGES:
        for codepoint in range(start, end):
            char = chr(codepoint)
            decomposed = unicodedata.normalize("NFKD", char)
            base = "".join(c for c in decomposed if not unicodedata.combining(c))
            if base != char and base.isascii() and base.isalpha():
                table[codepoint] = base
    for char, replacement in _SPECIAL_FOLDS.items():
        table[ord(char)] = replacement
    return table


FOLD_TABLE = _fold_table()
TOKEN_RE = re.compile(r"[^\W_]+")
UMLAUT_SPELLED = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "Ä": "Ae", "Ö": "Oe", "Ü": "Ue"})
SPELLED_UMLAUT_RE = re.compile(r"(?<=[a-z])(ae|oe|ue)")

# Only used to drop noise from the any-word fallback query; an all-words query keeps every word.
STOPWORDS = frozenset(
    """
    a an and are as at be been but by can could did do does for from had has have how i if in into is it
    its me my no not of on or our she so than that the their them then there these they this to was we
    were what when where which who why will with would you your about any all
    der die das und ist nicht ein eine einer mit von zu den dem des im am auf fur wie was wann wo ich du
    sie wir mein meine bis
    ve bir bu da de ne ile mi mu icin ben sen o ne zaman nerede nasil
    le la les des un une et est en du pour que qui quand ou
    el los las y es por con cuando donde
    """.split()
)


def fold(text: str) -> str:
    """The ASCII-leaning spelling of `text`; case is kept (the tokenizers lowercase)."""
    return text.translate(FOLD_TABLE)


def fold_tokens(text: str) -> list[str]:
    """Lowercased folded tokens: the unit both full-text backends index (letters and digits runs)."""
    return TOKEN_RE.findall(fold(text).lower())


def fold_for_index(text: str) -> str:
    """Folded text whose tokens are exactly `fold_tokens(text)`, so SQLite's unicode61 tokenizer and
    PostgreSQL's parser see the same words (PostgreSQL would otherwise keep "a.b@c.com" whole)."""
    return " ".join(fold_tokens(text))


@dataclass(slots=True)
class QueryTerm:
    """One word of a query: any of `variants` matches; `prefix` makes the last typed word a prefix."""

    variants: tuple[str, ...]
    prefix: bool = False

    @property
    def primary(self) -> str:
        return self.variants[0]


@dataclass(slots=True)
class ParsedQuery:
    text: str
    terms: list[QueryTerm] = field(default_factory=list)
    phrases: list[list[str]] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        return not self.terms and not self.phrases

    def any_word_terms(self) -> list[QueryTerm]:
        """Terms worth an OR query: stopwords and single characters dropped."""
        kept = [t for t in self.terms if len(t.primary) > 1 and t.primary not in STOPWORDS]
        for phrase in self.phrases:
            kept.extend(QueryTerm((word,)) for word in phrase if len(word) > 1 and word not in STOPWORDS)
        return kept

    def highlight_words(self) -> tuple[set[str], set[str]]:
        exact: set[str] = set()
        prefixes: set[str] = set()
        for term in self.terms:
            (prefixes if term.prefix else exact).update(term.variants)
        for phrase in self.phrases:
            exact.update(phrase)
        return exact, prefixes


def term_variants(word: str) -> tuple[str, ...]:
    """Both German spellings of an umlaut word: Müller ↔ Mueller (and so Muller); folded, lowercased."""
    folded = fold(word).lower()
    variants = [folded]
    spelled = fold(word.translate(UMLAUT_SPELLED)).lower()
    if spelled != folded:
        variants.append(spelled)
    elif SPELLED_UMLAUT_RE.search(folded):
        variants.append(SPELLED_UMLAUT_RE.sub(lambda m: m.group(1)[0], folded))
    return tuple(variants)


QUOTED_RE = re.compile(r'"([^"]*)"')


def parse_query(text: str, *, prefix_last: bool = False) -> ParsedQuery:
    """Words (each with its spelling variants) and "quoted phrases"; never raises on user input."""
    text = (text or "")[:1000]
    parsed = ParsedQuery(text=text)
    for phrase in QUOTED_RE.findall(text):
        words = fold_tokens(phrase)
        if len(words) > 1:
            parsed.phrases.append(words)
        elif words:
            parsed.terms.append(QueryTerm(term_variants(words[0])))
    rest = QUOTED_RE.sub(" ", text).replace('"', " ")
    chunks = rest.split()
    seen: set[str] = set()
    for index, chunk in enumerate(chunks):
        words = fold_tokens(chunk)
        if len(words) > 1:
            # "jeff.skilling@enron.com", "15.03.2024", "e-mail": the pieces belong together.
            parsed.phrases.append(words)
            continue
        if not words or words[0] in seen:
            continue
        seen.add(words[0])
        word = TOKEN_RE.findall(chunk)[0] if TOKEN_RE.search(chunk) else chunk
        is_last = index == len(chunks) - 1 and not rest.endswith(" ")
        parsed.terms.append(QueryTerm(term_variants(word), prefix=prefix_last and is_last and len(words[0]) >= 2))
    return parsed


# ---------------------------------------------------------------------------------------------------
# Snippets: matches are found in the folded text and shown, highlighted, in the original text.

SNIPPET_CHARS = 220
SNIPPET_SCAN_CHARS = 60_000


def _folded_with_offsets(text: str) -> tuple[str, list[int] | None]:
    """Folded text and, when folding changed the length, the original index of every folded char."""
    folded = text.translate(FOLD_TABLE)
    if len(folded) == len(text):
        return folded, None
    offsets: list[int] = []
    table = FOLD_TABLE
    for index, char in enumerate(text):
        replacement = table.get(ord(char))
        offsets.extend([index] * (len(replacement) if replacement is not None else 1))
    return folded, offsets


@lru_cache(maxsize=256)
def _match_pattern(exact: frozenset[str], prefixes: frozenset[str]) -> re.Pattern[str] | None:
    parts = [re.escape(word) + r"(?![^\W_])" for word in sorted(exact, key=len, reverse=True)]
    parts += [re.escape(word) + r"[^\W_]*" for word in sorted(prefixes, key=len, reverse=True)]
    if not parts:
        return None
    return re.compile(r"(?<![^\W_])(?:" + "|".join(parts) + ")", re.IGNORECASE)


def highlight(text: str, query: ParsedQuery | None, *, width: int = SNIPPET_CHARS) -> str:
    """An HTML-escaped window of `text` around the densest cluster of query words, matches in <mark>."""
    text = text or ""
    pattern = None
    if query is not None:
        exact, prefixes = query.highlight_words()
        pattern = _match_pattern(frozenset(exact), frozenset(prefixes))
    scan = text[:SNIPPET_SCAN_CHARS]
    folded, offsets = _folded_with_offsets(scan)
    spans: list[tuple[int, int, str]] = []
    if pattern is not None:
        for match in pattern.finditer(folded):
            start, end = match.span()
            if offsets is not None:
                start, end = offsets[start], offsets[end - 1] + 1
            spans.append((start, end, match.group(0).lower()))
            if len(spans) >= 400:
                break
    if not spans:
        return _plain_window(scan, 0, width)
    best_start, best_score = spans[0][0], -1
    right = 0
    for left, (start, _end, _word) in enumerate(spans):
        right = max(right, left)
        while right + 1 < len(spans) and spans[right + 1][1] <= start + width:
            right += 1
        distinct = len({word for _s, _e, word in spans[left : right + 1]})
        if distinct > best_score:
            best_start, best_score = start, distinct
    window_start = _word_start(scan, max(0, best_start - width // 5))
    window_end = min(len(scan), window_start + width)
    pieces: list[str] = ["…" if window_start > 0 else ""]
    cursor = window_start
    for start, end, _word in spans:
        if start < cursor or end > window_end:
            continue
        pieces.append(_clean(scan[cursor:start]))
        pieces.append(f"<mark>{_clean(scan[start:end])}</mark>")
        cursor = end
    pieces.append(_clean(scan[cursor:window_end]))
    if window_end < len(text):
        pieces.append("…")
    return "".join(pieces)


def _word_start(text: str, index: int) -> int:
    if index <= 0:
        return 0
    space = text.rfind(" ", max(0, index - 20), index)
    return space + 1 if space >= 0 else index


WHITESPACE_RE = re.compile(r"\s+")


def _clean(text: str) -> str:
    return html.escape(WHITESPACE_RE.sub(" ", text), quote=False)


def _plain_window(text: str, start: int, width: int) -> str:
    flat = " ".join(text[start : start + width * 2].split())
    suffix = "…" if len(flat) > width or len(text) > start + width * 2 else ""
    return html.escape(flat[:width], quote=False) + suffix
