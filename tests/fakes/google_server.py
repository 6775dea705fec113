"""A fake Google (OAuth 2.0 + Gmail REST API) on 127.0.0.1 that the real client libraries talk to.

The mailbox lives in memory and the test drives it: `add_message`, `modify_labels`, `delete_message` (each
recorded in the history feed as Gmail does: messageAdded, labelAdded/labelRemoved, messageDeleted),
`state()` (what the mirror must equal), `expire_history`,
`revoke` (refresh → invalid_grant, existing access tokens → 401), `rate_limit_next` (429 + Retry-After),
`stop()` (network failure). Tokens carry the scopes they were granted: messages.send answers 403
insufficientPermissions without gmail.send (and `fail_sends` makes it fail like Gmail's 400 invalid
argument); what was sent lands in `sent` and in the mailbox with the SENT label. messages.modify, trash and
untrash need gmail.modify (403 insufficientPermissions otherwise) and change labels like any other client.
Only the paths mailagent calls are served, including Gmail's multipart batch
endpoint. `LoopbackServer` is the small threaded HTTP server both fakes are built on.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import secrets
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

GMAIL_MODIFY_SCOPE = "https://www.googleapis.com/auth/gmail.modify"
GMAIL_SCOPES = [
    "https://www.googleapis.com/auth/gmail.readonly",
    "https://www.googleapis.com/auth/gmail.settings.basic",
    GMAIL_MODIFY_SCOPE,
    "https://www.googleapis.com/auth/calendar.events",
    "https://www.googleapis.com/auth/tasks",
]


# --- a tiny HTTP server for fakes -------------------------------------------------------------------


@dataclass
class FakeRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    body: bytes = b""

    def arg(self, name: str, default: str = "") -> str:
        values = self.query.get(name)
        return values[0] if values else default

    def form(self) -> dict[str, str]:
        return {key: values[0] for key, values in parse_qs(self.body.decode("utf-8")).items()}

    def bearer(self) -> str:
        value = self.headers.get("authorization", "")
        return value[len("Bearer ") :] if value.startswith("Bearer ") else ""

    def basic_auth(self) -> tuple[str, str] | None:
        value = self.headers.get("authorization", "")
        if not value.startswith("Basic "):
            return None
        user, _, password = base64.b64decode(value[len("Basic ") :]).decode("utf-8").partition(":")
        return unquote(user), unquote(password)


@dataclass
class FakeResponse:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, data: Any, status: int = 200, headers: dict[str, str] | None = None) -> FakeResponse:
        return cls(
            status,
            json.dumps(data).encode("utf-8"),
            {"Content-Type": "application/json; charset=UTF-8", **(headers or {})},
        )

    @classmethod
    def redirect(cls, location: str) -> FakeResponse:
        return cls(302, b"", {"Location": location})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body are separate writes: without this, Nagle + delayed ACK add ~40 ms per request.
    disable_nagle_algorithm = True
    server: _Server

    def _serve(self) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        request = FakeRequest(
            method=self.command,
            path=unquote(parts.path),
            query=parse_qs(parts.query, keep_blank_values=True),
            headers={key.lower(): value for key, value in self.headers.items()},
            body=self.rfile.read(length) if length else b"",
        )
        try:
            response = self.server.owner.dispatch(request)
        except Exception as exc:  # a bug in the fake: make it visible in the test's failure
            response = FakeResponse.json({"error": {"code": 500, "message": repr(exc)}}, status=500)
        self.send_response(response.status)
        for key, value in response.headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        self.wfile.write(response.body)

    do_GET = do_POST = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        return


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: LoopbackServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (a timeout test) closes the socket before the answer: not a server error.
        if isinstance(sys.exc_info()[1], BrokenPipeError | ConnectionResetError):
            return
        super().handle_error(request, client_address)


class LoopbackServer:
    """Threaded HTTP server on a free 127.0.0.1 port; subclasses implement `handle(request)`."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.log: list[tuple[str, str]] = []  # (method, path) of every request, in order
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LoopbackServer:
        server = _Server(("127.0.0.1", self.port), _Handler)
        server.owner = self
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=type(self).__name__, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening: clients now get 'connection refused' (the port is not reused by us)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def dispatch(self, request: FakeRequest) -> FakeResponse:
        with self.lock:
            self.log.append((request.method, request.path))
        return self.handle(request)

    def handle(self, request: FakeRequest) -> FakeResponse:
        raise NotImplementedError

    def calls(self, method: str, path_prefix: str) -> int:
        with self.lock:
            return sum(1 for m, p in self.log if m == method and p.startswith(path_prefix))


def pkce_matches(verifier: str, challenge: str, method: str) -> bool:
    if method == "S256":
        digest = hashlib.sha256(verifier.encode("ascii")).digest()
        return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=") == challenge
    return verifier == challenge


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


@dataclass
class RateLimit:
    status: int
    retry_after: str | None
    reason: str


# --- Google -----------------------------------------------------------------------------------------


@dataclass
class FakeGmailMessage:
    id: str
    thread_id: str
    raw: bytes
    labels: list[str]
    internal_date: int


@dataclass
class HistoryRecord:
    id: int
    kind: str  # messageAdded | messageDeleted | labelAdded | labelRemoved
    message_id: str
    thread_id: str
    labels_after: list[str]
    changed: list[str]


SYSTEM_LABELS = ["INBOX", "SENT", "DRAFT", "TRASH", "SPAM", "UNREAD", "STARRED", "IMPORTANT", "CATEGORY_PERSONAL"]


class FakeGoogleServer(LoopbackServer):
    def __init__(
        self,
        *,
        address: str = "owner@gmail.test",
        client_id: str = "gmail-client-id.apps.googleusercontent.test",
        client_secret: str = "gmail-client-secret",  # noqa: S107 - a fake
        max_page_size: int = 500,
    ) -> None:
        super().__init__()
        self.address = address
        self.client_id = client_id
        self.client_secret = client_secret
        self.max_page_size = max_page_size
        self.messages: dict[str, FakeGmailMessage] = {}
        self.history: list[HistoryRecord] = []
        self.history_id = 1000
        self.min_history_id = 0
        self.user_labels: dict[str, str] = {}
        self.label_creations = 0
        self.signature = '<div dir="ltr">Best,<br>Owner</div>'
        self.codes: dict[str, dict[str, str]] = {}
        self.refresh_tokens: set[str] = set()
        self.access_tokens: set[str] = set()
        self.calendar_events: list[dict[str, Any]] = []
        # The sendUpdates query parameter of each event insert, in order ("" when absent): whether Google mails
        # the attendees.
        self.calendar_send_updates: list[str] = []
        self.tasks: list[dict[str, Any]] = []
        self.revoked = False
        self.issue_refresh_token = True
        self.deny_consent = False
        self.granted_scopes: list[str] | None = None  # None: grant what was asked for
        self.rate_limits: list[RateLimit] = []
        self.token_grants: list[str] = []
        # token → granted scopes (a token missing here was made by token_set(): the read scopes).
        self.token_scopes: dict[str, list[str]] = {}
        self.sent: list[dict[str, Any]] = []  # {"raw": bytes, "threadId": str, "id": str} per messages.send
        self.fail_sends: str = ""  # a message: every messages.send answers 400 with it
        self.raw_fetches = 0  # messages.get with format=raw: bodies downloaded
        self._ids = itertools.count(0x18F0000000000000)

    # --- test controls ---

    def settings(self) -> dict[str, str]:
        """The Django settings that point mailagent at this fake."""
        return {
            "GMAIL_CLIENT_ID": self.client_id,
            "GMAIL_CLIENT_SECRET": self.client_secret,
            "GMAIL_API_ENDPOINT": self.url,
            # OAuth endpoints must be https; reached as plain http through tests/fakes/loopback_https.py.
            "GOOGLE_OAUTH_AUTH_URI": f"https://127.0.0.1:{self.port}/o/oauth2/auth",
            "GOOGLE_OAUTH_TOKEN_URI": f"https://127.0.0.1:{self.port}/token",
            "GOOGLE_CALENDAR_API_ENDPOINT": f"{self.url}/calendar/v3",
            "GOOGLE_TASKS_API_ENDPOINT": f"{self.url}/tasks/v1",
        }

    def add_message(
        self, raw: bytes, *, labels: Iterable[str] = ("INBOX", "UNREAD"), thread_id: str | None = None
    ) -> str:
        with self.lock:
            message_id = f"{next(self._ids):x}"
            message = FakeGmailMessage(
                id=message_id,
                thread_id=thread_id or message_id,
                raw=raw,
                labels=list(labels),
                internal_date=1_790_000_000_000 + len(self.messages),
            )
            self.messages[message_id] = message
            self._record("messageAdded", message, list(message.labels))
            return message_id

    def modify_labels(self, message_id: str, *, add: Iterable[str] = (), remove: Iterable[str] = ()) -> None:
        with self.lock:
            message = self.messages[message_id]
            added = [label for label in add if label not in message.labels]
            message.labels.extend(added)
            if added:
                self._record("labelAdded", message, added)
            removed = [label for label in remove if label in message.labels]
            message.labels = [label for label in message.labels if label not in removed]
            if removed:
                self._record("labelRemoved", message, removed)

    def delete_message(self, message_id: str) -> None:
        """Deleted for good (emptied from Trash, or messages.delete)."""
        with self.lock:
            message = self.messages.pop(message_id)
            self._record("messageDeleted", message, [])

    def state(self) -> dict[str, list[tuple[str, bool, bool]]]:
        """What the mirror must hold: {folder: sorted (Message-ID, seen, flagged)} of every message but spam, its
        folder as Gmail shows it (Trash, Spam, Inbox, Sent, Drafts, else the first user label, else All Mail)."""
        from email import message_from_bytes

        state: dict[str, list[tuple[str, bool, bool]]] = {}
        with self.lock:
            for message in self.messages.values():
                labels = message.labels
                if "SPAM" in labels:
                    continue
                system = [label for label in ("TRASH", "INBOX", "SENT", "DRAFT") if label in labels]
                users = [label for label in labels if label in self.user_labels]
                folder: str = (system or users or [""])[0]
                message_id = str(message_from_bytes(message.raw).get("Message-ID", "")).strip().strip("<>")
                state.setdefault(folder, []).append((message_id, "UNREAD" not in labels, "STARRED" in labels))
        return {folder: sorted(rows) for folder, rows in state.items()}

    def add_label(self, label_id: str, name: str) -> None:
        self.user_labels[label_id] = name

    def expire_history(self) -> None:
        """Every history id older than now is forgotten: history.list answers 404 for it."""
        with self.lock:
            self.min_history_id = self.history_id

    def revoke(self) -> None:
        """The user revoked access: refresh → invalid_grant, access tokens → 401."""
        with self.lock:
            self.revoked = True
            self.access_tokens.clear()

    def expire_access_tokens(self) -> None:
        with self.lock:
            self.access_tokens.clear()

    def rate_limit_next(
        self, count: int = 1, *, status: int = 429, retry_after: str | None = "1", reason: str = "rateLimitExceeded"
    ) -> None:
        with self.lock:
            self.rate_limits.extend(RateLimit(status, retry_after, reason) for _ in range(count))

    def token_set(self, *, refresh_token: bool = True, expires_in: int = 3600) -> dict[str, Any]:
        """A stored-credentials dict as mailagent writes it, backed by live tokens on this fake."""
        import datetime as dt

        access = self._new_access_token()
        refresh = self._new_refresh_token() if refresh_token else None
        expiry = dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0) + dt.timedelta(seconds=expires_in)
        return {
            "token": access,
            "refresh_token": refresh,
            "token_uri": f"{self.url}/token",
            "client_id": self.client_id,
            "scopes": list(GMAIL_SCOPES),
            "expiry": expiry.isoformat() + "Z",
        }

    # --- internals ---

    def _record(self, kind: str, message: FakeGmailMessage, changed: list[str]) -> None:
        self.history_id += 1
        self.history.append(
            HistoryRecord(self.history_id, kind, message.id, message.thread_id, list(message.labels), changed)
        )

    def _new_access_token(self, scopes: list[str] | None = None) -> str:
        token = "ya29." + secrets.token_urlsafe(24)
        with self.lock:
            self.access_tokens.add(token)
            self.token_scopes[token] = list(scopes or GMAIL_SCOPES)
        return token

    def _new_refresh_token(self, scopes: list[str] | None = None) -> str:
        token = "1//" + secrets.token_urlsafe(24)
        with self.lock:
            self.refresh_tokens.add(token)
            self.token_scopes[token] = list(scopes or GMAIL_SCOPES)
        return token

    @staticmethod
    def _error(status: int, message: str, reason: str = "", headers: dict[str, str] | None = None) -> FakeResponse:
        body: dict[str, Any] = {"code": status, "message": message, "status": HTTPStatus(status).name}
        if reason:
            body["errors"] = [{"message": message, "domain": "usageLimits", "reason": reason}]
        return FakeResponse.json({"error": body}, status=status, headers=headers)

    def handle(self, request: FakeRequest) -> FakeResponse:
        if request.path == "/o/oauth2/auth":
            return self._authorize(request)
        if request.path == "/token" and request.method == "POST":
            return self._token(request)
        if request.path == "/batch/gmail/v1" and request.method == "POST":
            limited = self._rate_limited()
            return limited or self._batch(request)
        if request.path.startswith("/gmail/v1/users/me/"):
            return self._api(request)
        if request.path.startswith(("/calendar/v3/", "/tasks/v1/")):
            return self._calendar_tasks(request)
        return self._error(404, f"No such path {request.path}")

    def _calendar_tasks(self, request: FakeRequest) -> FakeResponse:
        """Calendar v3 primary events (list with timeMin/timeMax, insert) and Tasks v1 @default insert."""
        if self.revoked or request.bearer() not in self.access_tokens:
            return self._error(401, "Request had invalid authentication credentials.")
        with self.lock:
            if request.path == "/calendar/v3/calendars/primary/events":
                if request.method == "GET":
                    low, high = request.arg("timeMin"), request.arg("timeMax")
                    items = [
                        e for e in self.calendar_events if e["start"]["dateTime"] < high and e["end"]["dateTime"] > low
                    ]
                    return FakeResponse.json({"items": items})
                body = json.loads(request.body or b"{}")
                event = {"id": f"evt{next(self._ids)}", **body}
                self.calendar_events.append(event)
                self.calendar_send_updates.append(request.arg("sendUpdates"))
                return FakeResponse.json(event)
            if request.path == "/tasks/v1/lists/@default/tasks" and request.method == "POST":
                body = json.loads(request.body or b"{}")
                task = {"id": f"task{next(self._ids)}", "status": "needsAction", **body}
                self.tasks.append(task)
                return FakeResponse.json(task)
        return self._error(404, f"No such path {request.path}")

    def _rate_limited(self) -> FakeResponse | None:
        with self.lock:
            if not self.rate_limits:
                return None
            limit = self.rate_limits.pop(0)
        headers = {"Retry-After": limit.retry_after} if limit.retry_after is not None else {}
        return self._error(limit.status, "Rate Limit Exceeded", limit.reason, headers)

    def _authorize(self, request: FakeRequest) -> FakeResponse:
        redirect_uri = request.arg("redirect_uri")
        state = request.arg("state")
        if request.arg("client_id") != self.client_id or request.arg("response_type") != "code":
            return FakeResponse(400, b"bad client or response type")
        if self.deny_consent:
            return FakeResponse.redirect(f"{redirect_uri}?{urlencode({'error': 'access_denied', 'state': state})}")
        scopes = self.granted_scopes if self.granted_scopes is not None else request.arg("scope").split()
        code = "4/" + secrets.token_urlsafe(16)
        with self.lock:
            self.codes[code] = {
                "redirect_uri": redirect_uri,
                "challenge": request.arg("code_challenge"),
                "method": request.arg("code_challenge_method", "plain"),
                "scope": " ".join(scopes),
                "access_type": request.arg("access_type"),
                "prompt": request.arg("prompt"),
                "login_hint": request.arg("login_hint"),
            }
        query = urlencode({"state": state, "code": code, "scope": " ".join(scopes)})
        return FakeResponse.redirect(f"{redirect_uri}?{query}")

    def _token(self, request: FakeRequest) -> FakeResponse:
        form = request.form()
        client_id, client_secret = request.basic_auth() or (form.get("client_id", ""), form.get("client_secret", ""))
        grant = form.get("grant_type", "")
        with self.lock:
            self.token_grants.append(grant)
        if client_id != self.client_id or client_secret != self.client_secret:
            return FakeResponse.json({"error": "invalid_client", "error_description": "Unauthorized"}, status=401)
        if grant == "authorization_code":
            with self.lock:
                issued = self.codes.pop(form.get("code", ""), None)
            if issued is None or issued["redirect_uri"] != form.get("redirect_uri"):
                return FakeResponse.json({"error": "invalid_grant", "error_description": "Bad Request"}, status=400)
            if not pkce_matches(form.get("code_verifier", ""), issued["challenge"], issued["method"]):
                return FakeResponse.json(
                    {"error": "invalid_grant", "error_description": "Invalid code verifier."}, status=400
                )
            granted = issued["scope"].split()
            body: dict[str, Any] = {
                "access_token": self._new_access_token(granted),
                "expires_in": 3599,
                "scope": issued["scope"],
                "token_type": "Bearer",
            }
            if self.issue_refresh_token and issued["access_type"] == "offline":
                body["refresh_token"] = self._new_refresh_token(granted)
            return FakeResponse.json(body)
        if grant == "refresh_token":
            if self.revoked or form.get("refresh_token") not in self.refresh_tokens:
                return FakeResponse.json(
                    {"error": "invalid_grant", "error_description": "Token has been expired or revoked."}, status=400
                )
            scopes = self.token_scopes.get(form.get("refresh_token", ""), GMAIL_SCOPES)
            return FakeResponse.json(
                {
                    "access_token": self._new_access_token(scopes),
                    "expires_in": 3599,
                    "scope": " ".join(scopes),
                    "token_type": "Bearer",
                }
            )
        return FakeResponse.json({"error": "unsupported_grant_type"}, status=400)

    def _api(self, request: FakeRequest) -> FakeResponse:
        if self.revoked or request.bearer() not in self.access_tokens:
            return self._error(401, "Request had invalid authentication credentials.")
        limited = self._rate_limited()
        if limited is not None:
            return limited
        route = request.path[len("/gmail/v1/users/me/") :].strip("/").split("/")
        with self.lock:
            if route == ["profile"]:
                return FakeResponse.json(
                    {
                        "emailAddress": self.address,
                        "messagesTotal": len(self.messages),
                        "threadsTotal": len({m.thread_id for m in self.messages.values()}),
                        "historyId": str(self.history_id),
                    }
                )
            if route == ["labels"] and request.method == "POST":
                return self._create_label(request)
            if route == ["labels"]:
                return FakeResponse.json({"labels": self._labels()})
            if route == ["messages"]:
                return self._list_messages(request)
            if route == ["messages", "send"] and request.method == "POST":
                return self._send(request)
            if len(route) == 3 and route[0] == "messages" and request.method == "POST":
                return self._change(request, route[1], route[2])
            if len(route) == 2 and route[0] == "messages":
                return self._get_message(request, route[1])
            if route == ["history"]:
                return self._history(request)
            if route == ["settings", "sendAs"]:
                return FakeResponse.json({"sendAs": self._send_as()})
        return self._error(404, "Requested entity was not found.")

    def _send(self, request: FakeRequest) -> FakeResponse:
        """users.messages.send: needs gmail.send; the message joins threadId when given (as Gmail does when
        the headers match), gets the SENT label, and appears in history like any new message."""
        scopes = self.token_scopes.get(request.bearer(), GMAIL_SCOPES)
        if not {"https://www.googleapis.com/auth/gmail.send", "https://mail.google.com/"} & set(scopes):
            return self._error(403, "Request had insufficient authentication scopes.", "insufficientPermissions")
        if self.fail_sends:
            return self._error(400, self.fail_sends, "invalidArgument")
        body = json.loads(request.body or b"{}")
        raw_text = str(body.get("raw") or "")
        if not raw_text:
            return self._error(
                400, "'raw' RFC822 payload message string or uploading message via /upload/* URL required"
            )
        raw = base64.urlsafe_b64decode(raw_text + "=" * (-len(raw_text) % 4))
        thread_id = str(body.get("threadId") or "")
        if thread_id and not any(m.thread_id == thread_id for m in self.messages.values()):
            return self._error(404, "Requested entity was not found.")
        message_id = self.add_message(raw, labels=["SENT"], thread_id=thread_id or None)
        message = self.messages[message_id]
        self.sent.append({"raw": raw, "threadId": thread_id, "id": message_id})
        return FakeResponse.json({"id": message.id, "threadId": message.thread_id, "labelIds": ["SENT"]})

    def _change(self, request: FakeRequest, message_id: str, verb: str) -> FakeResponse:
        """messages.modify / trash / untrash: label changes, recorded in the history like any client's."""
        scopes = self.token_scopes.get(request.bearer(), GMAIL_SCOPES)
        if not {GMAIL_MODIFY_SCOPE, "https://mail.google.com/"} & set(scopes):
            return self._error(403, "Request had insufficient authentication scopes.", "insufficientPermissions")
        message = self.messages.get(message_id)
        if message is None:
            return self._error(404, "Requested entity was not found.")
        if verb == "modify":
            body = json.loads(request.body or b"{}")
            add = [str(label) for label in body.get("addLabelIds") or []]
            remove = [str(label) for label in body.get("removeLabelIds") or []]
            known = set(SYSTEM_LABELS) | set(self.user_labels)
            if any(label not in known for label in [*add, *remove]):
                return self._error(400, "Invalid label: " + ", ".join(sorted(set(add + remove) - known)))
            self.modify_labels(message_id, add=add, remove=remove)
        elif verb == "trash":
            self.modify_labels(message_id, add=["TRASH"])
        elif verb == "untrash":
            self.modify_labels(message_id, remove=["TRASH"])
        else:
            return self._error(404, "Requested entity was not found.")
        return FakeResponse.json({"id": message.id, "threadId": message.thread_id, "labelIds": list(message.labels)})

    def _create_label(self, request: FakeRequest) -> FakeResponse:
        """users.labels.create: needs gmail.labels or gmail.modify; a name already taken (Gmail compares them
        case-insensitively, system names included) is 409, as Gmail answers."""
        scopes = self.token_scopes.get(request.bearer(), GMAIL_SCOPES)
        if not {GMAIL_MODIFY_SCOPE, "https://www.googleapis.com/auth/gmail.labels", "https://mail.google.com/"} & set(
            scopes
        ):
            return self._error(403, "Request had insufficient authentication scopes.", "insufficientPermissions")
        name = str(json.loads(request.body or b"{}").get("name") or "").strip()
        if not name:
            return self._error(400, "Invalid label name")
        taken = {label.casefold() for label in [*SYSTEM_LABELS, *self.user_labels.values()]}
        if name.casefold() in taken:
            return self._error(409, "Label name exists or conflicts", "conflict")
        label_id = f"Label_{len(self.user_labels) + 1}"
        while label_id in self.user_labels:
            label_id += "0"
        self.user_labels[label_id] = name
        self.label_creations += 1
        return FakeResponse.json({"id": label_id, "name": name, "type": "user"})

    def _labels(self) -> list[dict[str, Any]]:
        labels = [{"id": label, "name": label, "type": "system"} for label in SYSTEM_LABELS]
        labels += [{"id": key, "name": name, "type": "user"} for key, name in self.user_labels.items()]
        return labels

    def _send_as(self) -> list[dict[str, Any]]:
        return [
            {
                "sendAsEmail": f"alias-{self.address}",
                "displayName": "Alias",
                "signature": "<b>alias signature</b>",
                "isPrimary": False,
                "isDefault": False,
            },
            {
                "sendAsEmail": self.address,
                "displayName": "Owner",
                "signature": self.signature,
                "isPrimary": True,
                "isDefault": True,
            },
        ]

    def _page(self, items: list[Any], request: FakeRequest, default: int) -> tuple[list[Any], str | None]:
        size = max(1, min(int(request.arg("maxResults", str(default)) or default), self.max_page_size))
        offset = int(request.arg("pageToken", "0") or 0)
        page = items[offset : offset + size]
        following = str(offset + size) if offset + size < len(items) else None
        return page, following

    def _list_messages(self, request: FakeRequest) -> FakeResponse:
        include_spam_trash = request.arg("includeSpamTrash", "false").lower() == "true"
        newest_first = list(reversed(self.messages.values()))
        if not include_spam_trash:
            newest_first = [m for m in newest_first if not {"SPAM", "TRASH"} & set(m.labels)]
        for label in request.query.get("labelIds") or []:
            newest_first = [m for m in newest_first if label in m.labels]
        if request.arg("q"):
            newest_first = [m for m in newest_first if search_matches(request.arg("q"), m.raw)]
        page, following = self._page(newest_first, request, 100)
        body: dict[str, Any] = {"resultSizeEstimate": len(newest_first)}
        if page:
            body["messages"] = [{"id": m.id, "threadId": m.thread_id} for m in page]
        if following:
            body["nextPageToken"] = following
        return FakeResponse.json(body)

    def _get_message(self, request: FakeRequest, message_id: str) -> FakeResponse:
        message = self.messages.get(message_id)
        if message is None:
            return self._error(404, "Requested entity was not found.")
        body: dict[str, Any] = {
            "id": message.id,
            "threadId": message.thread_id,
            "labelIds": list(message.labels),
            "historyId": str(self.history_id),
            "internalDate": str(message.internal_date),
            "sizeEstimate": len(message.raw),
            "snippet": "",
        }
        fmt = request.arg("format", "full")
        if fmt == "raw":
            body["raw"] = b64url(message.raw)
            self.raw_fetches += 1
        elif fmt != "minimal":
            return self._error(400, f"format={fmt} is not supported by this fake")
        return FakeResponse.json(body)

    def _history(self, request: FakeRequest) -> FakeResponse:
        start = int(request.arg("startHistoryId", "0") or 0)
        if start < self.min_history_id or start > self.history_id:
            return self._error(404, "Requested entity was not found.")
        wanted = set(
            request.query.get("historyTypes") or ["messageAdded", "messageDeleted", "labelAdded", "labelRemoved"]
        )
        records = [r for r in self.history if r.id > start and r.kind in wanted]
        page, following = self._page(records, request, 100)
        history = []
        for record in page:
            message = {"id": record.message_id, "threadId": record.thread_id, "labelIds": record.labels_after}
            entry: dict[str, Any] = {"id": str(record.id), "messages": [{"id": record.message_id}]}
            if record.kind == "messageAdded":
                entry["messagesAdded"] = [{"message": message}]
            elif record.kind == "messageDeleted":
                entry["messagesDeleted"] = [{"message": message}]
            elif record.kind == "labelAdded":
                entry["labelsAdded"] = [{"message": message, "labelIds": record.changed}]
            else:
                entry["labelsRemoved"] = [{"message": message, "labelIds": record.changed}]
            history.append(entry)
        body: dict[str, Any] = {"historyId": str(self.history_id)}
        if history:
            body["history"] = history
        if following:
            body["nextPageToken"] = following
        return FakeResponse.json(body)

    def _batch(self, request: FakeRequest) -> FakeResponse:
        """Gmail's multipart/mixed batch endpoint: every part is an embedded HTTP request."""
        content_type = request.headers.get("content-type", "")
        envelope = BytesParser(policy=HTTP).parsebytes(
            b"Content-Type: " + content_type.encode("ascii") + b"\r\n\r\n" + request.body
        )
        boundary = "batch_" + secrets.token_hex(8)
        chunks: list[str] = []
        for part in envelope.iter_parts():
            content_id = str(part["Content-ID"] or "")
            payload = part.get_payload(decode=True)
            inner = self._inner_request(payload if isinstance(payload, bytes) else str(payload).encode())
            response = self.dispatch(inner) if not inner.path.startswith("/batch/") else self._error(400, "nested")
            header_lines = "".join(f"{key}: {value}\r\n" for key, value in response.headers.items())
            chunks.append(
                f"--{boundary}\r\n"
                "Content-Type: application/http\r\n"
                f"Content-ID: <response-{content_id.strip('<>')}>\r\n\r\n"
                f"HTTP/1.1 {response.status} {HTTPStatus(response.status).phrase}\r\n"
                f"{header_lines}\r\n"
                f"{response.body.decode('utf-8')}\r\n"
            )
        body = ("".join(chunks) + f"--{boundary}--\r\n").encode("utf-8")
        return FakeResponse(200, body, {"Content-Type": f"multipart/mixed; boundary={boundary}"})

    @staticmethod
    def _inner_request(payload: bytes) -> FakeRequest:
        text = payload.decode("utf-8").replace("\r\n", "\n")
        request_line, _, rest = text.partition("\n")
        head, _, body = rest.partition("\n\n")
        method, target, _ = request_line.split(" ", 2)
        headers: dict[str, str] = {}
        for line in head.split("\n"):
            if ":" in line:
                key, _, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
        parts = urlsplit(target)
        return FakeRequest(
            method=method,
            path=unquote(parts.path),
            query=parse_qs(parts.query, keep_blank_values=True),
            headers=headers,
            body=body.encode("utf-8"),
        )


def searchable_text(raw: bytes) -> str:
    """Subject, sender and text body of a raw message, lowercased: what the fakes' search looks at."""
    import email
    from email import policy

    parsed = email.message_from_bytes(raw, policy=policy.default)
    body = parsed.get_body(preferencelist=("plain", "html"))
    text = body.get_content() if body is not None else ""
    return f"{parsed.get('Subject', '')} {parsed.get('From', '')} {text}".lower()


def search_matches(query: str, raw: bytes) -> bool:
    """A small subset of Gmail's query syntax: words (all required), "phrases" and (a OR b) groups;
    operators such as after:/before:/from: are ignored."""
    import re

    text = searchable_text(raw)
    for group in re.findall(r"\(([^)]*)\)", query):
        options = [o.strip().strip('"').lower() for o in group.split(" OR ") if o.strip()]
        if options and not any(option in text for option in options):
            return False
    rest = re.sub(r"\([^)]*\)", " ", query)
    for phrase in re.findall(r'"([^"]+)"', rest):
        if phrase.lower() not in text:
            return False
    rest = re.sub(r'"[^"]*"', " ", rest)
    return all(word.lower() in text for word in rest.split() if ":" not in word and word != "OR")
