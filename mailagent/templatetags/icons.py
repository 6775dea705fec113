"""The project's one icon set: small inline SVGs drawn for mailagent on a 24 by 24 grid, stroked in the text colour.

`{% icon "mail" %}` is decorative (aria-hidden): put a text label next to it. `{% icon "x" label="Remove" %}`
stands alone and is announced by its label. Inline (no sprite, no font, no CDN), so the Content-Security-Policy
needs nothing and the icon takes the colour of the text around it.
"""

from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

# The drawings: SVG elements inside a 24 by 24 viewBox, stroked unless they say fill.
ICONS: dict[str, str] = {
    "mail": '<rect x="3" y="5" width="18" height="14" rx="2"/><path d="M3.5 6.5 12 13l8.5-6.5"/>',
    "chevron-down": '<path d="m6 9 6 6 6-6"/>',
    "paperclip": (
        '<path d="M20 11.5 12.2 19.3a5 5 0 0 1-7.1-7.1l8-8a3.4 3.4 0 0 1 4.8 4.8l-7.7 7.7a1.7 1.7 0 0 1-2.4-2.4'
        'L15 7.1"/>'
    ),
    "tool": (
        '<circle cx="12" cy="12" r="3"/><circle cx="12" cy="12" r="6.5"/>'
        '<path d="M12 2.5v3M12 18.5v3M2.5 12h3M18.5 12h3M5.3 5.3l2.1 2.1M16.6 16.6l2.1 2.1M5.3 18.7l2.1-2.1'
        'M16.6 7.4l2.1-2.1"/>'
    ),
    "check": '<path d="m5 12.5 4.5 4.5L19 7"/>',
    "x": '<path d="M6 6l12 12M18 6 6 18"/>',
    "minus": '<path d="M6 12h12"/>',
    "dots": (
        '<circle cx="6" cy="12" r="1.2" fill="currentColor"/><circle cx="12" cy="12" r="1.2" fill="currentColor"/>'
        '<circle cx="18" cy="12" r="1.2" fill="currentColor"/>'
    ),
    "circle": '<circle cx="12" cy="12" r="7"/>',
    "star": '<path d="M12 3.5 14.6 9l6 .6-4.5 4 1.3 5.9L12 16.5l-5.4 3 1.3-5.9-4.5-4 6-.6z" fill="currentColor"/>',
    "grip": (
        '<circle cx="9" cy="6" r="1.3" fill="currentColor"/><circle cx="15" cy="6" r="1.3" fill="currentColor"/>'
        '<circle cx="9" cy="12" r="1.3" fill="currentColor"/><circle cx="15" cy="12" r="1.3" fill="currentColor"/>'
        '<circle cx="9" cy="18" r="1.3" fill="currentColor"/><circle cx="15" cy="18" r="1.3" fill="currentColor"/>'
    ),
    "arrow-up": '<path d="M12 19V5M6 11l6-6 6 6"/>',
    "arrow-down": '<path d="M12 5v14M6 13l6 6 6-6"/>',
    "arrow-left": '<path d="M19 12H5M11 6l-6 6 6 6"/>',
    "pencil": '<path d="M4 20h4L19 9l-4-4L4 16z"/><path d="m13 7 4 4"/>',
    "diamond": '<path d="M12 3.5 20.5 12 12 20.5 3.5 12z"/>',
    "corner-down-right": '<path d="M6 4v7a4 4 0 0 0 4 4h10"/><path d="m15 10 5 5-5 5"/>',
}


@register.simple_tag
def icon(name: str, label: str = "") -> SafeString:
    """An icon of the set; with `label` it is an image with that accessible name, otherwise hidden from
    assistive technology (the text next to it says what it means)."""
    try:
        drawing = ICONS[name]
    except KeyError:
        raise template.TemplateSyntaxError(f"no icon named {name!r}; the set has {', '.join(sorted(ICONS))}") from None
    accessible = format_html(' role="img" aria-label="{}"', label) if label else mark_safe(' aria-hidden="true"')
    return format_html(
        '<svg class="icon icon-{}" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" '
        'stroke-linecap="round" stroke-linejoin="round" focusable="false"{}>{}</svg>',
        name,
        accessible,
        mark_safe(drawing),  # noqa: S308 - the constants above, never user input
    )
