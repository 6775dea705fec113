"""The one icon set (mailagent/templatetags/icons.py): inline SVG, hidden from assistive technology unless it
stands alone with a label, and the only kind of icon the templates use (no emoji or dingbat glyphs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.template import Context, Template, TemplateSyntaxError

from mailagent.templatetags.icons import ICONS

# Pictographs and dingbats that served as icons: emoji, ✉ ✓ ✕ ✎ ★ ⚙ ◆ ○, braille grips (⠿). Arrows in prose
# ("Settings → Models", "Alt+↑") are text and stay.
ICON_GLYPHS = re.compile("[\U0001f300-\U0001faff\u2600-\u27bf\u25a0-\u25ff\u2800-\u28ff\u2b50\u21b3]")


def render(source: str, **context: str) -> str:
    return Template("{% load icons %}" + source).render(Context(context))


@pytest.mark.parametrize("name", sorted(ICONS))
def test_every_icon_is_an_inline_svg_hidden_from_screen_readers(name: str) -> None:
    html = render(f'{{% icon "{name}" %}}')
    assert html.startswith(f'<svg class="icon icon-{name}" viewBox="0 0 24 24"') and html.endswith("</svg>")
    assert 'aria-hidden="true"' in html and 'focusable="false"' in html and "role=" not in html
    assert re.search(r"<(path|circle|rect)\b", html)


def test_a_labelled_icon_is_an_image_with_that_name_escaped() -> None:
    html = render('{% icon "star" label=name %}', name="Flagged <b>")
    assert 'role="img" aria-label="Flagged &lt;b&gt;"' in html and "aria-hidden" not in html


def test_an_unknown_icon_is_an_error_not_an_empty_space() -> None:
    with pytest.raises(TemplateSyntaxError, match="no icon named 'nope'"):
        render('{% icon "nope" %}')


def test_templates_use_no_glyph_icons() -> None:
    found = []
    for path in sorted(Path(settings.BASE_DIR, "templates").rglob("*.html")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "{% comment" in line or line.lstrip().startswith("{#"):
                continue
            found += [f"{path.name}:{number}: {glyph}" for glyph in ICON_GLYPHS.findall(line)]
    assert found == []
