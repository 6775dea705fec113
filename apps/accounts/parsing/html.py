"""HTML bodies: sanitized for display (nh3) and turned into text (inscriptis), both in bounded time."""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape

import nh3

from apps.accounts.parsing.charsets import _clean
from apps.accounts.parsing.limits import (
    MAX_HTML_ATTRIBUTES,
    MAX_HTML_DEPTH,
    MAX_HTML_SANITIZE_CHARS,
    MAX_HTML_TO_TEXT_CHARS,
)

_HTML_TAGS = frozenset(
    {
        *nh3.ALLOWED_TAGS,
        "font",
        "tfoot",
        "section",
        "main",
        "address",
        "big",
        "label",
    }
)
_HTML_ATTRIBUTES: dict[str, set[str]] = {
    **{tag: set(attrs) for tag, attrs in nh3.ALLOWED_ATTRIBUTES.items()},
    "*": {"style", "align", "valign", "dir", "lang", "title", "width", "height", "bgcolor"},
    "a": {"href", "hreflang", "title", "name"},
    "img": {"src", "alt", "width", "height", "align", "border", "title"},
    "table": {"align", "summary", "border", "cellpadding", "cellspacing", "width", "bgcolor"},
    "td": {"colspan", "rowspan", "headers", "align", "valign", "width", "height", "bgcolor", "nowrap"},
    "th": {"colspan", "rowspan", "headers", "scope", "align", "valign", "width", "bgcolor", "nowrap"},
    "font": {"color", "face", "size"},
}
_STYLE_PROPERTIES = frozenset(
    {
        "color",
        "background-color",
        "font",
        "font-family",
        "font-size",
        "font-style",
        "font-weight",
        "text-align",
        "text-decoration",
        "text-indent",
        "text-transform",
        "line-height",
        "letter-spacing",
        "white-space",
        "vertical-align",
        "width",
        "max-width",
        "min-width",
        "height",
        "margin",
        "margin-top",
        "margin-bottom",
        "margin-left",
        "margin-right",
        "padding",
        "padding-top",
        "padding-bottom",
        "padding-left",
        "padding-right",
        "border",
        "border-top",
        "border-bottom",
        "border-left",
        "border-right",
        "border-color",
        "border-style",
        "border-width",
        "border-collapse",
        "border-spacing",
        "border-radius",
        "list-style-type",
    }
)
_HTML_CLEANER = nh3.Cleaner(
    tags=set(_HTML_TAGS),
    clean_content_tags={"script", "style", "title", "iframe", "object", "embed", "textarea", "select", "noscript"},
    attributes=_HTML_ATTRIBUTES,
    link_rel="noopener noreferrer",
    url_schemes={"http", "https", "mailto", "tel", "cid", "ftp"},
    filter_style_properties=set(_STYLE_PROPERTIES),
    strip_comments=True,
)
_RECUT_MARGIN = 16 * 1024
# A tag is anything from "<" to the next ">" with no "<" inside: each character is scanned once, so a stray "<"
# can never make the scan quadratic (5 MB of "<" or of "<a" takes ~0.07 s).
_TAG = re.compile(r"<[^<>]*>")
# A start tag long enough to hold more attributes than allowed (each takes at least two characters).
_LONG_START_TAG = re.compile(rf"<[A-Za-z][^<>]{{{2 * MAX_HTML_ATTRIBUTES},}}>")
_QUOTED_VALUE = re.compile(r"\"[^\"]*\"|'[^']*'")
_ATTRIBUTE_NAME = re.compile(r"[\s/][^\s/>=\"']")
_TAG_NAME = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:-]{0,63})")
# Elements that never nest: void elements, and those whose end tag is optional and implied by a sibling
# (an unclosed <p> or <td> per line is common in real mail and does not deepen the parser's stack).
_NON_NESTING = frozenset(
    {
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track",
        "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "rb", "rt", "rp", "rtc",
        "thead", "tbody", "tfoot", "colgroup", "caption", "html", "head", "body",
    }
)  # fmt: skip


def html_nesting_depth(html: str, *, stop_above: int) -> int:
    """How deep elements nest, from the tags alone, in one linear pass (stops once past `stop_above`).

    html5ever (inside nh3) looks up the stack of open elements for every end tag, so its time grows with
    the square of the nesting depth: 200,000 nested <div>s take many minutes. An end tag only closes an
    element that is open under that name, as in the parser; ones it would ignore do not lower the count.
    """
    depth = deepest = 0
    open_by_name: dict[str, int] = {}
    for closing, raw_name in _TAG_NAME.findall(html):  # tuples, not match objects: ~2x faster on tag soup
        name = raw_name if raw_name.islower() else raw_name.lower()
        if name in _NON_NESTING:
            continue
        if closing:
            count = open_by_name.get(name, 0)
            if count:
                open_by_name[name] = count - 1
                depth -= 1
        else:
            open_by_name[name] = open_by_name.get(name, 0) + 1
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop_above:
                    break
    return deepest


def most_attributes(html: str, *, stop_above: int) -> int:
    """The most attributes one start tag carries, counted in a linear pass (stops once past `stop_above`).

    html5ever (inside nh3) compares every attribute of a tag with the ones before it to drop duplicates, so
    its time grows with the square of the attributes per tag: one tag with 300,000 attributes (4.9 MB)
    took 5.7 s. Quoted values are removed before counting, so a long style or alt text is not counted as
    many attributes.
    """
    most = 0
    for match in _LONG_START_TAG.finditer(html):
        names = _ATTRIBUTE_NAME.findall(_QUOTED_VALUE.sub("", match.group()))
        most = max(most, len(names))
        if most > stop_above:
            break
    return most


def strip_tags(html: str) -> str:
    """Text of HTML by dropping tags: linear and crude, for HTML too big or too deep to parse."""
    text = _TAG.sub(" ", html)
    return _clean(" ".join(unescape(text).split()))


def render_html(html: str, errors: list[str], *, over_budget: Callable[[], bool]) -> str | None:
    """The sanitized HTML to store and show, or None when it cannot be sanitized in bounded time."""
    if over_budget():
        errors.append("parse time budget exceeded before the HTML body; it is kept as text only")
        return None
    depth = html_nesting_depth(html, stop_above=MAX_HTML_DEPTH)
    if depth > MAX_HTML_DEPTH:
        errors.append(
            f"HTML body nests elements more than {MAX_HTML_DEPTH} levels deep; not shown as HTML, "
            "its text was kept by stripping the tags"
        )
        return None
    attributes = most_attributes(html, stop_above=MAX_HTML_ATTRIBUTES)
    if attributes > MAX_HTML_ATTRIBUTES:
        errors.append(
            f"HTML body has an element with more than {MAX_HTML_ATTRIBUTES} attributes; not shown as HTML, "
            "its text was kept by stripping the tags"
        )
        return None
    if len(html) > MAX_HTML_SANITIZE_CHARS:
        html = html[:MAX_HTML_SANITIZE_CHARS]
        errors.append(f"HTML body cut to {MAX_HTML_SANITIZE_CHARS} characters for display")
    clean = _sanitize_html(html, errors)
    if len(clean) > MAX_HTML_SANITIZE_CHARS:
        # Escaping makes the output longer than its input (every stray "<" becomes "&lt;"): the cap is on what
        # is stored and shown. Sanitizing the cut output again closes the element or entity the cut broke;
        # text already escaped does not grow again, so a small margin keeps the result under the cap.
        clean = _sanitize_html(clean[: MAX_HTML_SANITIZE_CHARS - _RECUT_MARGIN], errors)
        if f"HTML body cut to {MAX_HTML_SANITIZE_CHARS} characters for display" not in errors:
            errors.append(f"HTML body cut to {MAX_HTML_SANITIZE_CHARS} characters for display")
    return clean


def _sanitize_html(html: str, errors: list[str]) -> str:
    try:
        return _clean(_HTML_CLEANER.clean(html))
    except Exception as exc:
        errors.append(f"HTML could not be sanitized: {type(exc).__name__}")
        return ""


def _html_to_text(html: str, errors: list[str]) -> str:
    if len(html) > MAX_HTML_TO_TEXT_CHARS:
        html = html[:MAX_HTML_TO_TEXT_CHARS]
        errors.append(f"HTML body cut to {MAX_HTML_TO_TEXT_CHARS} characters for text extraction")
    # inscriptis and lxml (~8 MB) load with the first HTML body, not in every process that imports the parser.
    from inscriptis import get_text

    try:
        text = get_text(html)
    except Exception:  # lxml refuses some inputs (control characters); a tag strip is better than nothing
        text = _TAG.sub(" ", html)
    return _clean(text.strip())
