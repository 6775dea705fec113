# ruff: noqa: RUF001, RUF002 -- Turkish, German and Nordic letters are the point of this module.
"""Text folding, query parsing and snippet highlighting shared by every backend.

Folding maps letters to the ASCII spelling people type when they lack the keyboard: Turkish ı/İ/ş/ğ/ç,
German ß and umlauts, Scandinavian ø/æ, Polish ł and every precomposed Latin letter with a diacritic.
The same fold is applied to indexed text and to queries, so "Son Odeme Tarihi" finds "Son Ödeme
Tarihi" and the other way round. German also writes umlauts as ae/oe/ue ("Mueller"); that is handled on
the query side only, by searching both spellings of a word (see `term_variants`).
"""

from __future__ import annotations

import bisect
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
_STOPWORD_TEXT = """
    a an and are as at be been but by can could did do does for from had has have how i if in into is it
    its me my no not of on or our she so than that the their them then there these they this to was we
    were what when where which who why will with would you your about any all
    der die das und ist nicht ein eine einer mit von zu den dem des im am auf fur wie was wann wo ich du
    sie wir mein meine bis
    ve bir bu da de ne ile mi mu icin ben sen o ne zaman nerede nasil
    le la les des un une et est en du pour que qui quand ou
    el los las y es por con cuando donde
    """
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def fold(text: str) -> str:
    """The ASCII-leaning spelling of `text`; case is kept (the tokenizers lowercase)."""
    if text.isascii():  # the table maps no ASCII character: most mail is returned as is (translate: ~0.35 ms/KB)
        return text
    return text.translate(FOLD_TABLE)


def fold_tokens(text: str) -> list[str]:
    """Lowercased folded tokens: the unit both full-text backends index (letters and digits runs)."""
    return TOKEN_RE.findall(fold(text).lower())


_ASCII_TOKEN_RE = re.compile(rb"[A-Za-z0-9]+")  # TOKEN_RE restricted to ASCII, where folding changes nothing


def fold_for_index(text: str) -> str:
    """Folded text whose tokens are exactly `fold_tokens(text)`, so SQLite's unicode61 tokenizer and
    PostgreSQL's parser see the same words (PostgreSQL would otherwise keep "a.b@c.com" whole)."""
    if text.isascii():  # most mail: the same tokens, found faster by a bytes pattern
        return b" ".join(_ASCII_TOKEN_RE.findall(text.lower().encode("ascii"))).decode("ascii")
    return " ".join(fold_tokens(text))


@dataclass(slots=True)
class QueryTerm:
    """One word of a query: any of `variants` matches; `prefix` makes the last typed word a prefix."""

    variants: tuple[str, ...]
    prefix: bool = False
    # The second variant is a guess (an ae/oe/ue in a typed word read as an umlaut): the index decides if it stays.
    guessed: bool = False

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

    def content_terms(self) -> list[QueryTerm]:
        """The words that carry meaning: stopwords go unless nothing else is left ("to be or not to be")."""
        kept = [t for t in self.terms if t.primary not in STOPWORDS or t.prefix]
        return kept if kept or self.phrases else list(self.terms)

    def without_stopwords(self) -> ParsedQuery:
        return ParsedQuery(text=self.text, terms=self.content_terms(), phrases=self.phrases)

    def any_word_terms(self) -> list[QueryTerm]:
        """Terms worth an OR query: stopwords and single characters dropped."""
        kept = [t for t in self.terms if len(t.primary) > 1 and t.primary not in STOPWORDS]
        for phrase in self.phrases:
            kept.extend(QueryTerm((word,)) for word in phrase if len(word) > 1 and word not in STOPWORDS)
        return kept

    def highlight_words(self) -> tuple[set[str], set[str]]:
        exact: set[str] = set()
        prefixes: set[str] = set()
        for term in self.content_terms():
            (prefixes if term.prefix else exact).update(term.variants)
        for phrase in self.phrases:
            exact.update(phrase)
        return exact, prefixes


def _is_guessed(word: str, variants: tuple[str, ...]) -> bool:
    return len(variants) > 1 and word.translate(UMLAUT_SPELLED) == word


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
# Letters joined by an apostrophe: "Sheriff's", "O'Neal", "l'accord", "don't".
_ELISION_RE = re.compile(r"^[^\w]*[^\W_]+(?:['\u2019\u02bc][^\W_]+)+[^\w]*$")
_POSSESSIVE_RE = re.compile(r"^(.*[^\W_])['\u2019\u02bc][^\W_]([^\w]*)$")


def _elided_word(chunk: str) -> str | None:
    """The word of an apostrophe compound once its one-letter pieces (a possessive or contracted "s",
    "t", an elided article "l", "d") are left out, when exactly one piece remains: "Sheriff's" -> "Sheriff";
    and any word without a last one-letter piece: "SCE&G's" -> "SCE&G". Searched as a phrase ("sheriff s"),
    it would find only mail writing the same possessive."""
    if not _ELISION_RE.match(chunk):
        possessive = _POSSESSIVE_RE.match(chunk)
        return possessive.group(1) + possessive.group(2) if possessive else None
    pieces = [piece for piece in TOKEN_RE.findall(chunk) if len(piece) > 1]
    return pieces[0] if len(pieces) == 1 else None


def _initialism(words: list[str]) -> str | None:
    """An initialism written with inner punctuation, "SCE&G", "AT&T", "R&D": its pieces joined ("sceg"),
    the way other mail writes it, when every piece is one to three letters and three letters or more result
    ("U.S." would be the word "us")."""
    joined = "".join(words)
    if len(joined) >= 3 and all(len(word) <= 3 and word.isalpha() for word in words):
        return joined
    return None


def parse_query(text: str, *, prefix_last: bool = False) -> ParsedQuery:
    """Words (each with its spelling variants) and "quoted phrases"; never raises on user input."""
    text = (text or "")[:1000]
    parsed = ParsedQuery(text=text)
    for phrase in QUOTED_RE.findall(text):
        words = fold_tokens(phrase)
        if len(words) > 1:
            parsed.phrases.append(words)
        elif words:
            variants = term_variants(words[0])
            parsed.terms.append(QueryTerm(variants, guessed=_is_guessed(words[0], variants)))
    rest = QUOTED_RE.sub(" ", text).replace('"', " ")
    chunks = rest.split()
    seen: set[str] = set()
    for index, chunk in enumerate(chunks):
        chunk = _elided_word(chunk) or chunk
        words = fold_tokens(chunk)
        if len(words) > 1:
            # "jeff.skilling@enron.com", "15.03.2024", "e-mail": the pieces belong together.
            parsed.phrases.append(words)
            if (joined := _initialism(words)) and joined not in seen:
                seen.add(joined)  # "SCE&G" is also "SCEG"
                parsed.terms.append(QueryTerm((joined,)))
            continue
        if not words or words[0] in seen:
            continue
        seen.add(words[0])
        word = TOKEN_RE.findall(chunk)[0] if TOKEN_RE.search(chunk) else chunk
        is_last = index == len(chunks) - 1 and not rest.endswith(" ")
        variants = term_variants(word)
        parsed.terms.append(
            QueryTerm(
                variants,
                prefix=prefix_last and is_last and len(words[0]) >= 2,
                guessed=_is_guessed(word, variants),
            )
        )
    return parsed


# ---------------------------------------------------------------------------------------------------
# Snippets: matches are found in the folded text and shown, highlighted, in the original text.

SNIPPET_CHARS = 220
SNIPPET_FIRST_SCAN_CHARS = 3_000
SNIPPET_SCAN_CHARS = 20_000
MAX_SPANS = 120


_EXPANDING = {codepoint: len(text) - 1 for codepoint, text in FOLD_TABLE.items() if len(text) > 1}
_EXPANDING_RE = re.compile("[" + "".join(re.escape(chr(codepoint)) for codepoint in _EXPANDING) + "]")


class _OffsetMap:
    """Maps an index in folded text back to the original, given where folding made letters longer."""

    def __init__(self, text: str) -> None:
        self.folded_starts: list[int] = []
        self.original: list[int] = []
        self.extra_before: list[int] = []
        extra = 0
        for match in _EXPANDING_RE.finditer(text):
            index = match.start()
            self.folded_starts.append(index + extra)
            self.original.append(index)
            self.extra_before.append(extra)
            extra += _EXPANDING[ord(text[index])]
        self.total_extra = extra

    def __call__(self, folded_index: int) -> int:
        position = bisect.bisect_right(self.folded_starts, folded_index) - 1
        if position < 0:
            return folded_index
        grown = self._extra_at(position)
        if folded_index - self.folded_starts[position] <= grown:
            return self.original[position]  # inside the letters one original letter became
        return folded_index - self.extra_before[position] - grown

    def _extra_at(self, position: int) -> int:
        following = self.extra_before[position + 1] if position + 1 < len(self.extra_before) else self.total_extra
        return following - self.extra_before[position]


def _folded_with_offsets(text: str) -> tuple[str, _OffsetMap | None]:
    """Folded text and, when folding made it longer, a map back to original indexes."""
    folded = text.translate(FOLD_TABLE)
    if len(folded) == len(text):
        return folded, None
    return folded, _OffsetMap(text)


def highlight(text: str, query: ParsedQuery | None, *, width: int = SNIPPET_CHARS) -> str:
    """An HTML-escaped window of `text` around the densest cluster of query words, matches in <mark>."""
    text = text or ""
    exact: set[str] = set()
    prefixes: set[str] = set()
    if query is not None:
        exact, prefixes = query.highlight_words()
    spans: list[tuple[int, int, str]] = []
    scan = text
    # Query words are usually near the top: look at the start first, the rest only when it has none.
    for scan_chars in (SNIPPET_FIRST_SCAN_CHARS, SNIPPET_SCAN_CHARS):
        scan = text[:scan_chars]
        spans = _find_spans(scan, frozenset(exact), frozenset(prefixes)) if exact or prefixes else []
        if spans or len(text) <= scan_chars:
            break
    if not spans:
        return _plain_window(scan, 0, width)
    # The window (of `width` chars, starting at a match) holding the most distinct query words.
    best_start, best_score = spans[0][0], -1
    counts: dict[str, int] = {}
    right = -1
    for left, (start, _end, word) in enumerate(spans):
        while right + 1 < len(spans) and spans[right + 1][1] <= start + width:
            right += 1
            counts[spans[right][2]] = counts.get(spans[right][2], 0) + 1
        if len(counts) > best_score:
            best_start, best_score = start, len(counts)
        if right >= left:
            counts[word] -= 1
            if not counts[word]:
                del counts[word]
        else:
            right = left
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


def _find_spans(scan: str, exact: frozenset[str], prefixes: frozenset[str]) -> list[tuple[int, int, str]]:
    """(start, end, word) of every query word in `scan`, positions in the original text.

    str.find per word (C speed) instead of one regex alternation, which tries every word at every
    position: on long newsletters that was most of a search's time."""
    folded, offsets = _folded_with_offsets(scan)
    lowered = folded.lower()
    if len(lowered) != len(folded):  # a rare letter whose lowercase is longer; keep positions aligned
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in folded)
    size = len(lowered)
    found: list[tuple[int, int]] = []
    for word, is_prefix in [*((w, False) for w in exact), *((w, True) for w in prefixes)]:
        start = lowered.find(word)
        while start != -1 and len(found) < MAX_SPANS * 4:
            end = start + len(word)
            if start == 0 or not _is_word_char(lowered[start - 1]):
                if is_prefix:
                    while end < size and _is_word_char(lowered[end]):
                        end += 1
                    found.append((start, end))
                elif end >= size or not _is_word_char(lowered[end]):
                    found.append((start, end))
            start = lowered.find(word, start + 1)
    found.sort()
    spans: list[tuple[int, int, str]] = []
    last_end = -1
    for start, end in found:
        if start < last_end:
            continue  # overlapping variants (mueller / muller): keep the first
        last_end = end
        word = lowered[start:end]
        if offsets is not None:
            start, end = offsets(start), offsets(end - 1) + 1
        spans.append((start, end, word))
        if len(spans) >= MAX_SPANS:
            break
    return spans


def _is_word_char(char: str) -> bool:
    return char.isalnum()


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
