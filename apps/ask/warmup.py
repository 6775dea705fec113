"""Per-process warm-up: what the first question after a web process starts would otherwise wait for.

dateparser compiles each language's patterns on that language's first use (about 4 s for all of them,
up to a second for one question naming a period), the embedder and the gist model load, the gist matrix
(0.5 s for 44,715 mails) and the search index its vectors (2.4 s for 96,507 passages) on first use. The
Ask page and every run start this once per process in a background thread, so a user typing a question
does not pay for it; a question asked meanwhile simply does the part it needs itself.

Not when the process starts, unless ASK_WARM_UP_AT_START says so: the models and the index's in-process
parts are ~200 MB of a web process on an empty mailbox (and the keyword index grows with the mail), held
for nothing by a server nobody searches (bench/memory.py). A search loads what it needs on its first use.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import connection
from django.utils import timezone

logger = logging.getLogger(__name__)

THREAD_NAME = "ask-warm-up"
_lock = threading.Lock()
_thread: threading.Thread | None = None


def warm_up_in_background() -> threading.Thread | None:
    """Start the warm-up thread unless this process started it already (or ASK_WARM_UP is off)."""
    global _thread
    if not getattr(settings, "ASK_WARM_UP", True):
        return None
    with _lock:
        if _thread is not None:
            return None
        _thread = threading.Thread(target=warm_up, name=THREAD_NAME, daemon=True)
        _thread.start()
        return _thread


def warm_up_at_start() -> threading.Thread | None:
    """As a web process starts (mailagent/asgi.py): the warm-up only when ASK_WARM_UP_AT_START is on."""
    if not getattr(settings, "ASK_WARM_UP_AT_START", False):
        return None
    return warm_up_in_background()


def warm_up() -> None:
    from apps.ask import dates
    from apps.ask.intent_model import classify_by_examples
    from apps.search.backends import get_search_backend
    from apps.search.embedders import embed_query_cached, get_embedder
    from apps.search.gist import get_gist_embedder, load_gist_matrix

    try:
        # What every question needs first: the embedder, then the search index's in-process parts (the vectors,
        # 2.4 s for Enron's 96,507 passages; the keyword index starts its own background load) and the gist
        # model and matrix. dateparser's languages come last: only a question naming a period needs them, and
        # their 4 s of Python hold the interpreter lock a question asked meanwhile needs too.
        embed_query_cached(get_embedder(), "warm up")
        classify_by_examples("warm up")  # the intent examples' vectors (apps/ask/intent_model.py), ~1.5 s
        backend = get_search_backend()
        backend.semantic("warm up", limit=1, snippets=False)
        backend.keyword("warm up", limit=1, snippets=False)
        gist_embedder = get_gist_embedder()  # the rerank's gist model (apps/search/gist.py)
        if gist_embedder is not None:
            embed_query_cached(gist_embedder, "warm up")
            load_gist_matrix(gist_embedder)  # 0.5 s for Enron's 44,715 gists
        dates.warm_up(timezone.now())
    except Exception:  # a failed warm-up costs the first question its time, nothing else
        logger.warning(
            "ask: background warm-up failed; the first questions build what they need themselves", exc_info=True
        )
    finally:
        connection.close()  # this thread's own connection
