"""How the extractive answer quotes the passages it chose: values in bold, a sentence ending in a colon with
the short lines it introduces, a place written as a block of short lines as the whole block."""

from __future__ import annotations

import re

from apps.ask.answer import EvidenceMessage
from apps.ask.textutil import Passage

# A quoted sentence ending in a colon ("The new fees are as follows:") is quoted with the short lines it
# introduces (a table of fees, the proposed dates), at most this many.
LIST_ITEMS = 5
LIST_ITEM_CHARS = 160
# A place asked for is often written as a block of short lines (a name, a street, a town): the whole block of at
# most this many lines is quoted.
BLOCK_LINES = 6
BLOCK_LINE_WORDS = 6


def address_block(message: EvidenceMessage, passage: Passage) -> list[Passage]:
    """The paragraph of short whole lines a short line belongs to, in mail order ("VICTORIA HOUSE RESORT" /
    "P.O. Box 22" / "Ambergris Caye, Belize"); just the passage when it or its paragraph is running text."""
    block = [
        p
        for p in message.passages
        if p.paragraph == passage.paragraph and p.source == passage.source and p.attachment == passage.attachment
    ]
    if (
        len(passage.text.split()) > BLOCK_LINE_WORDS
        or not any(p is passage for p in block)
        or len(block) > BLOCK_LINES
        or not all(p.whole_line and len(p.text) <= LIST_ITEM_CHARS for p in block)
    ):
        return [passage]
    return block


def introduced_lines(message: EvidenceMessage, passage: Passage, quoted: list[Passage]) -> list[Passage]:
    """The lines a sentence ending in a colon introduces ("The new fees are as follows:"): the short whole lines
    after it in its own paragraph or, when it ends its paragraph, in the next one (a table set off by a blank
    line), from the same part of the mail; none already quoted."""
    if not passage.text.rstrip().endswith(":"):
        return []
    index = next((i for i, p in enumerate(message.passages) if p is passage), None)
    if index is None:
        return []
    lines: list[Passage] = []
    paragraph: int | None = None
    for following in message.passages[index + 1 :]:
        if paragraph is None:
            paragraph = following.paragraph  # the intro's own paragraph or the next one
            if paragraph > passage.paragraph + 1:
                break
        if (
            following.paragraph != paragraph
            or following.source != passage.source
            or following.attachment != passage.attachment
            or not following.whole_line
            or len(following.text) > LIST_ITEM_CHARS
            or following.text.rstrip().endswith(":")
        ):
            break
        if not any(following is q for q in quoted):
            lines.append(following)
        if len(lines) == LIST_ITEMS:
            break
    return lines


def mark(text: str, values: list[str]) -> str:
    """Each value in bold, in one pass: the longest value first where several start at one place, and never
    part of a longer number or word ("$4" is not marked inside "$404")."""
    patterns = [
        ("(?<!\\w)" if value[0].isalnum() else "") + re.escape(value) + ("(?!\\w)" if value[-1].isalnum() else "")
        for value in sorted({v for v in values if v}, key=len, reverse=True)
    ]
    if not patterns:
        return text
    return re.sub("|".join(patterns), lambda match: f"**{match.group(0)}**", text).replace("****", "")
