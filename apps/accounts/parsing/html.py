"""HTML bodies: sanitized for display (nh3) and turned into text (inscriptis)."""

from __future__ import annotations

import re

import nh3
from inscriptis import get_text

from apps.accounts.parsing.charsets import _clean
from apps.accounts.parsing.limits import MAX_HTML_TO_TEXT_CHARS

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
_TAG = re.compile(r"<[^>]*>")


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
    try:
        text = get_text(html)
    except Exception:  # lxml refuses some inputs (control characters); a tag strip is better than nothing
        text = _TAG.sub(" ", html)
    return _clean(text.strip())
