"""Test-only transport: lets the OAuth libraries reach the plain-http fakes at their https:// addresses.

OAuth libraries (oauthlib, MSAL) insist on https endpoints, and mailagent accepts only https OAuth
endpoints. The fakes (google_server.py, graph_server.py) therefore advertise https://127.0.0.1:<port> for
their OAuth endpoints while they listen for plain http. While `plain_http_for(port)` is active, requests'
and httplib2's transports send https requests for exactly that loopback host and port as plain http. This lives here, in
the tests, so that production code has no path that downgrades https.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import httplib2
import requests
from requests.adapters import HTTPAdapter

_lock = threading.Lock()
_ports: Counter[int] = Counter()
_original_send = HTTPAdapter.send
_original_httplib2_request = httplib2.Http.request


def _plain(url: str) -> str:
    if url.startswith("https://127.0.0.1:"):
        port = urlsplit(url).port
        with _lock:
            if port is not None and _ports[port] > 0:
                return "http://" + url[len("https://") :]
    return url


def _send(self: HTTPAdapter, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
    """requests (requests-oauthlib, MSAL, google-auth's requests transport)."""
    request.url = _plain(request.url or "")
    return _original_send(self, request, *args, **kwargs)


def _httplib2_request(self: httplib2.Http, uri: str, *args: Any, **kwargs: Any) -> Any:
    """httplib2 (googleapiclient's AuthorizedHttp refreshing a token after a 401)."""
    return _original_httplib2_request(self, _plain(uri), *args, **kwargs)


@contextmanager
def plain_http_for(port: int) -> Iterator[None]:
    with _lock:
        _ports[port] += 1
        HTTPAdapter.send = _send  # type: ignore[method-assign]
        httplib2.Http.request = _httplib2_request
    try:
        yield
    finally:
        with _lock:
            _ports[port] -= 1
            if not +_ports:
                HTTPAdapter.send = _original_send  # type: ignore[method-assign]
                httplib2.Http.request = _original_httplib2_request
