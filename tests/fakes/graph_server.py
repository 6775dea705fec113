"""A fake Microsoft identity platform + Microsoft Graph (mail) on 127.0.0.1 for MSAL and our Graph client.

Identity: /{tenant}/v2.0/.well-known/openid-configuration, /{tenant}/oauth2/v2.0/authorize (redirects back
at once with a code) and /{tenant}/oauth2/v2.0/token (authorization_code with PKCE, refresh_token).
MSAL only accepts https authorities, so the authority and the OpenID configuration's endpoints are
https://127.0.0.1:<port>; the tests reach them as plain http through tests/fakes/loopback_https.py.

Graph: /me, mailFolders (+ childFolders, well-known names), per-folder messages/delta with nextLink and
deltaLink, message MIME ($value), attachments, sendMail (MIME; needs Mail.Send, which a refresh can only get
once the user consented to it, like AADSTS65001; sent mail lands in `sent` and in Sent Items).
Mail changes as another client makes them: `update_message` (isRead/flag), `move_message` (the id stays: the
immutable-id behaviour mailagent asks for; the source folder's delta reports it `@removed`, the target's as
new), `delete_message` (gone for good: `@removed`); `state()` is what the mirror must equal. PATCH
/me/messages/{id} and POST /me/messages/{id}/move need Mail.ReadWrite (403 otherwise).
Test switches: `expire_delta_tokens` (410 Gone
SyncStateNotFound), `revoke` (invalid_grant), `rate_limit_next` (429 + Retry-After), `stop()`.
"""

from __future__ import annotations

import base64
import itertools
import json
import secrets
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from tests.fakes.google_server import (
    FakeRequest,
    FakeResponse,
    LoopbackServer,
    RateLimit,
    b64url,
    pkce_matches,
    searchable_text,
)

TENANT_ID = "9188040d-6c67-4c5b-b112-36a304b66dad"
WELL_KNOWN = {
    "inbox": "Inbox",
    "sentitems": "Sent Items",
    "drafts": "Drafts",
    "deleteditems": "Deleted Items",
    "junkemail": "Junk Email",
    "archive": "Archive",
}


@dataclass
class FakeFolder:
    id: str
    display_name: str
    parent_id: str | None = None
    well_known: str | None = None


@dataclass
class FakeAttachment:
    id: str
    name: str
    content_type: str
    content: bytes
    content_id: str = ""
    is_inline: bool = False


@dataclass
class FakeGraphMessage:
    id: str
    folder_id: str
    mime: bytes
    conversation_id: str
    is_read: bool = False
    flagged: bool = False
    changed_seq: int = 0
    removed: bool = False
    attachments: list[FakeAttachment] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)


class FakeGraphServer(LoopbackServer):
    def __init__(
        self,
        *,
        tenant: str = "common",
        address: str = "owner@outlook.test",
        client_id: str = "11111111-2222-3333-4444-555555555555",
        client_secret: str = "outlook-client-secret",  # noqa: S107 - a fake
    ) -> None:
        super().__init__()
        self.tenant = tenant
        self.address = address
        self.client_id = client_id
        self.client_secret = client_secret
        self.user_oid = str(uuid.uuid5(uuid.NAMESPACE_URL, address))
        self.folders: dict[str, FakeFolder] = {}
        self.messages: dict[str, FakeGraphMessage] = {}
        # (folder id, message id, seq): a message left that folder (moved away or deleted) at seq.
        self.tombstones: list[tuple[str, str, int]] = []
        self.seq = 0
        self.delta_epoch = 1
        self.codes: dict[str, dict[str, str]] = {}
        self.refresh_tokens: set[str] = set()
        self.access_tokens: set[str] = set()
        self.revoked = False
        self.issue_refresh_token = True
        self.rate_limits: list[RateLimit] = []
        self.token_grants: list[str] = []
        # access token → its scopes; refresh token → what the user consented to (refreshes stay within it).
        self.token_scopes: dict[str, set[str]] = {}
        self.consented: dict[str, set[str]] = {}
        self.sent: list[bytes] = []  # the MIME of every sendMail
        self.fail_sends: str = ""  # a message: every sendMail answers 400 ErrorInvalidRecipients with it
        self.max_page_size = 10
        self._ids = itertools.count(1)
        # Calendar and To Do (for the orchestration tools); tools_forbidden answers 403 like a token
        # without Calendars.ReadWrite / Tasks.ReadWrite.
        self.events: list[dict[str, Any]] = []
        self.todo_lists: list[dict[str, Any]] = [
            {"id": "list-tasks", "displayName": "Tasks", "wellknownListName": "defaultList"},
            {"id": "list-shopping", "displayName": "Shopping", "wellknownListName": "none"},
        ]
        self.tasks: dict[str, list[dict[str, Any]]] = {"list-tasks": [], "list-shopping": []}
        self.tools_forbidden = False
        for name, display in WELL_KNOWN.items():
            self.add_folder(display, well_known=name)

    # --- test controls ---

    def settings(self) -> dict[str, str]:
        return {
            "OUTLOOK_CLIENT_ID": self.client_id,
            "OUTLOOK_CLIENT_SECRET": self.client_secret,
            "OUTLOOK_TENANT": self.tenant,
            "OUTLOOK_AUTHORITY_HOST": self.https_base,
            "GRAPH_API_ENDPOINT": f"{self.url}/v1.0",
        }

    @property
    def https_base(self) -> str:
        """What MSAL is told (it insists on https); tests/fakes/loopback_https.py sends it as plain http."""
        return f"https://127.0.0.1:{self.port}"

    def folder_id(self, well_known: str) -> str:
        return next(folder.id for folder in self.folders.values() if folder.well_known == well_known)

    def add_folder(self, display_name: str, *, parent_id: str | None = None, well_known: str | None = None) -> str:
        with self.lock:
            # Real ids are long base64 strings with "=" and "-": exercise quoting.
            folder_id = "AAMkAGI2-" + b64url(f"folder-{next(self._ids)}-{display_name}".encode()) + "=="
            self.folders[folder_id] = FakeFolder(folder_id, display_name, parent_id, well_known)
            return folder_id

    def add_message(
        self,
        folder_id: str,
        mime: bytes,
        *,
        is_read: bool = False,
        flagged: bool = False,
        conversation_id: str | None = None,
        attachments: list[FakeAttachment] | None = None,
        categories: list[str] | None = None,
    ) -> str:
        with self.lock:
            message_id = "AAkALgAAAAAAHYQDEapmEc2byACqAC-EWg0A" + secrets.token_hex(8) + "AAA="
            self.seq += 1
            self.messages[message_id] = FakeGraphMessage(
                id=message_id,
                folder_id=folder_id,
                mime=mime,
                conversation_id=conversation_id or "AAQkA" + secrets.token_hex(6),
                is_read=is_read,
                flagged=flagged,
                changed_seq=self.seq,
                attachments=list(attachments or []),
                categories=list(categories or []),
            )
            return message_id

    def update_message(
        self,
        message_id: str,
        *,
        is_read: bool | None = None,
        flagged: bool | None = None,
        categories: list[str] | None = None,
    ) -> None:
        with self.lock:
            message = self.messages[message_id]
            if is_read is not None:
                message.is_read = is_read
            if flagged is not None:
                message.flagged = flagged
            if categories is not None:
                message.categories = list(categories)  # Graph replaces the whole list
            self.seq += 1
            message.changed_seq = self.seq

    def delete_message(self, message_id: str) -> None:
        with self.lock:
            self.seq += 1
            message = self.messages[message_id]
            message.removed = True
            message.changed_seq = self.seq
            self.tombstones.append((message.folder_id, message_id, self.seq))

    def move_message(self, message_id: str, folder_id: str) -> None:
        with self.lock:
            message = self.messages[message_id]
            if message.folder_id == folder_id:
                return
            self.seq += 1
            self.tombstones.append((message.folder_id, message_id, self.seq))
            self.seq += 1
            message.folder_id = folder_id
            message.changed_seq = self.seq

    def state(self) -> dict[str, list[tuple[str, bool, bool]]]:
        """{folder id: sorted (Message-ID, isRead, flagged)} of every message there is."""
        from email import message_from_bytes

        state: dict[str, list[tuple[str, bool, bool]]] = {}
        with self.lock:
            for message in self.messages.values():
                if message.removed:
                    continue
                message_id = str(message_from_bytes(message.mime).get("Message-ID", "")).strip().strip("<>")
                state.setdefault(message.folder_id, []).append((message_id, message.is_read, message.flagged))
        return {folder: sorted(rows) for folder, rows in state.items()}

    def expire_delta_tokens(self) -> None:
        """Every delta/skip token issued so far now answers 410 Gone (SyncStateNotFound)."""
        with self.lock:
            self.delta_epoch += 1

    def revoke(self) -> None:
        with self.lock:
            self.revoked = True
            self.access_tokens.clear()

    def expire_access_tokens(self) -> None:
        with self.lock:
            self.access_tokens.clear()

    def rate_limit_next(self, count: int = 1, *, status: int = 429, retry_after: str | None = "1") -> None:
        with self.lock:
            self.rate_limits.extend(RateLimit(status, retry_after, "TooManyRequests") for _ in range(count))

    # --- routing ---

    def handle(self, request: FakeRequest) -> FakeResponse:
        path = request.path
        if path == f"/{self.tenant}/v2.0/.well-known/openid-configuration":
            return FakeResponse.json(self._openid_configuration())
        if path == f"/{self.tenant}/oauth2/v2.0/authorize":
            return self._authorize(request)
        if path == f"/{self.tenant}/oauth2/v2.0/token" and request.method == "POST":
            return self._token(request)
        if path.startswith("/v1.0/"):
            return self._graph(request)
        return self._error(404, "ResourceNotFound", f"No such path {path}")

    @staticmethod
    def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> FakeResponse:
        return FakeResponse.json({"error": {"code": code, "message": message}}, status=status, headers=headers)

    # --- identity platform ---

    def _openid_configuration(self) -> dict[str, Any]:
        base = f"{self.https_base}/{self.tenant}"
        return {
            "issuer": f"{self.https_base}/{TENANT_ID}/v2.0",
            "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
            "token_endpoint": f"{base}/oauth2/v2.0/token",
            "jwks_uri": f"{base}/discovery/v2.0/keys",
            "response_types_supported": ["code", "id_token", "code id_token", "id_token token"],
            "scopes_supported": ["openid", "profile", "email", "offline_access"],
            "subject_types_supported": ["pairwise"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "tenant_region_scope": "EU",
        }

    def _client_info(self) -> str:
        return b64url(json.dumps({"uid": self.user_oid, "utid": TENANT_ID}).encode())

    def _id_token(self, nonce: str) -> str:
        now = int(time.time())
        claims = {
            "aud": self.client_id,
            "iss": f"{self.https_base}/{TENANT_ID}/v2.0",
            "iat": now,
            "nbf": now,
            "exp": now + 3600,
            "name": "Outlook Owner",
            "oid": self.user_oid,
            "preferred_username": self.address,
            "sub": b64url(self.user_oid.encode()),
            "tid": TENANT_ID,
            "ver": "2.0",
        }
        if nonce:
            claims["nonce"] = nonce
        header = b64url(json.dumps({"alg": "none", "typ": "JWT"}).encode())
        return f"{header}.{b64url(json.dumps(claims).encode())}."

    def _authorize(self, request: FakeRequest) -> FakeResponse:
        if request.arg("client_id") != self.client_id or request.arg("response_type") != "code":
            return FakeResponse(400, b"AADSTS700016: bad client or response type")
        code = "0.AX" + secrets.token_urlsafe(24)
        with self.lock:
            self.codes[code] = {
                "redirect_uri": request.arg("redirect_uri"),
                "challenge": request.arg("code_challenge"),
                "method": request.arg("code_challenge_method", "plain"),
                "scope": request.arg("scope"),
                "nonce": request.arg("nonce"),
                "login_hint": request.arg("login_hint"),
            }
        query = urlencode(
            {"code": code, "state": request.arg("state"), "client_info": self._client_info(), "session_state": "s1"}
        )
        return FakeResponse.redirect(f"{request.arg('redirect_uri')}?{query}")

    def _tokens(self, scope: str, nonce: str = "", *, consented: set[str] | None = None) -> dict[str, Any]:
        access = "eyJ0eXAi." + secrets.token_urlsafe(24)
        with self.lock:
            self.access_tokens.add(access)
            self.token_scopes[access] = set(scope.split())
        body: dict[str, Any] = {
            "token_type": "Bearer",
            "scope": scope,
            "expires_in": 3600,
            "ext_expires_in": 3600,
            "access_token": access,
            "id_token": self._id_token(nonce),
            "client_info": self._client_info(),
        }
        if self.issue_refresh_token:
            refresh = "0.AR" + secrets.token_urlsafe(32)
            with self.lock:
                self.refresh_tokens.add(refresh)
                self.consented[refresh] = set(consented if consented is not None else scope.split())
            body["refresh_token"] = refresh
        return body

    def _token(self, request: FakeRequest) -> FakeResponse:
        form = request.form()
        client_id, client_secret = request.basic_auth() or (form.get("client_id", ""), form.get("client_secret", ""))
        grant = form.get("grant_type", "")
        with self.lock:
            self.token_grants.append(grant)
        if client_id != self.client_id or client_secret != self.client_secret:
            return FakeResponse.json(
                {"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided."},
                status=401,
            )
        if grant == "authorization_code":
            with self.lock:
                issued = self.codes.pop(form.get("code", ""), None)
            if issued is None or issued["redirect_uri"] != form.get("redirect_uri"):
                return FakeResponse.json(
                    {"error": "invalid_grant", "error_description": "AADSTS70008: The code has expired."}, status=400
                )
            if not pkce_matches(form.get("code_verifier", ""), issued["challenge"], issued["method"]):
                return FakeResponse.json(
                    {"error": "invalid_grant", "error_description": "AADSTS501481: Code verifier mismatch."},
                    status=400,
                )
            return FakeResponse.json(
                self._tokens(
                    form.get("scope") or issued["scope"], issued["nonce"], consented=set(issued["scope"].split())
                )
            )
        if grant == "refresh_token":
            if self.revoked or form.get("refresh_token") not in self.refresh_tokens:
                return FakeResponse.json(
                    {
                        "error": "invalid_grant",
                        "error_description": "AADSTS700082: The refresh token has expired due to inactivity.",
                        "error_codes": [700082],
                        "suberror": "bad_token",
                    },
                    status=400,
                )
            consented = self.consented.get(form.get("refresh_token", ""), set())
            wanted = set(form.get("scope", "").split()) - {"openid", "profile", "offline_access"}
            if consented and not wanted <= consented:
                missing = " ".join(sorted(wanted - consented))
                return FakeResponse.json(
                    {
                        "error": "invalid_grant",
                        "error_description": f"AADSTS65001: The user or administrator has not consented to use the "
                        f"application with ID '{self.client_id}'. Scopes: {missing}",
                        "error_codes": [65001],
                        "suberror": "consent_required",
                    },
                    status=400,
                )
            return FakeResponse.json(self._tokens(form.get("scope", ""), consented=consented or None))
        return FakeResponse.json({"error": "unsupported_grant_type"}, status=400)

    # --- Graph ---

    def _rate_limited(self) -> FakeResponse | None:
        with self.lock:
            if not self.rate_limits:
                return None
            limit = self.rate_limits.pop(0)
        headers = {"Retry-After": limit.retry_after} if limit.retry_after is not None else {}
        return self._error(
            limit.status, "TooManyRequests", "Application is over its MailboxConcurrency limit.", headers
        )

    def _graph(self, request: FakeRequest) -> FakeResponse:
        if self.revoked or request.bearer() not in self.access_tokens:
            return self._error(401, "InvalidAuthenticationToken", "Access token has expired or is not yet valid.")
        limited = self._rate_limited()
        if limited is not None:
            return limited
        route = request.path[len("/v1.0/") :].strip("/").split("/")
        with self.lock:
            if route == ["me"]:
                return FakeResponse.json(
                    {
                        "id": self.user_oid,
                        "displayName": "Outlook Owner",
                        "mail": self.address,
                        "userPrincipalName": self.address,
                    }
                )
            if route[:2] == ["me", "mailFolders"]:
                return self._mail_folders(request, route[2:])
            if route == ["me", "sendMail"] and request.method == "POST":
                return self._send_mail(request)
            if route == ["me", "messages"] and request.arg("$search"):
                return self._search(request)
            if route[:2] == ["me", "messages"] and len(route) >= 3 and request.method in ("PATCH", "POST"):
                return self._change_message(request, route[2], route[3:])
            if route[:2] == ["me", "messages"] and len(route) >= 3:
                return self._message(route[2], route[3:])
            if route[:2] in (["me", "calendarView"], ["me", "events"], ["me", "todo"]):
                if self.tools_forbidden:
                    return self._error(403, "ErrorAccessDenied", "Access is denied. Check credentials and try again.")
                return self._calendar_or_todo(request, route)
        return self._error(404, "ResourceNotFound", f"Resource not found for the segment '{route[-1]}'.")

    def _send_mail(self, request: FakeRequest) -> FakeResponse:
        """POST /me/sendMail with a base64 MIME body (Content-Type text/plain): 202, and a copy in Sent Items."""
        if "Mail.Send" not in self.token_scopes.get(request.bearer(), set()):
            return self._error(403, "ErrorAccessDenied", "Access is denied. Check credentials and try again.")
        if not request.headers.get("content-type", "").startswith("text/plain"):
            return self._error(400, "ErrorMimeContentInvalid", "This fake only takes MIME sendMail")
        if self.fail_sends:
            return self._error(400, "ErrorInvalidRecipients", self.fail_sends)
        try:
            mime = base64.b64decode(request.body, validate=True)
        except ValueError:
            return self._error(400, "ErrorMimeContentInvalidBase64String", "Invalid base64 string for MIME content.")
        self.sent.append(mime)
        self.add_message(self.folder_id("sentitems"), mime, is_read=True)
        return FakeResponse(202)

    def _calendar_or_todo(self, request: FakeRequest, route: list[str]) -> FakeResponse:
        if route == ["me", "calendarView"] and request.method == "GET":
            start, end = request.arg("startDateTime"), request.arg("endDateTime")
            if not start or not end:
                return self._error(400, "ErrorInvalidParameter", "startDateTime and endDateTime are required")
            inside = [e for e in self.events if e["start"]["dateTime"] < end and e["end"]["dateTime"] > start]
            return FakeResponse.json({"value": inside})
        if route == ["me", "events"] and request.method == "POST":
            body = json.loads(request.body or b"{}")
            if not body.get("subject") or "dateTime" not in body.get("start", {}):
                return self._error(400, "ErrorInvalidRequest", "subject and start are required")
            event = {"id": f"event-{next(self._ids)}", **body}
            self.events.append(event)
            return FakeResponse.json(event, status=201)
        if route == ["me", "todo", "lists"] and request.method == "GET":
            return FakeResponse.json({"value": self.todo_lists})
        if len(route) == 5 and route[2] == "lists" and route[4] == "tasks" and request.method == "POST":
            if route[3] not in self.tasks:
                return self._error(404, "ErrorItemNotFound", "The list does not exist")
            body = json.loads(request.body or b"{}")
            if not body.get("title"):
                return self._error(400, "ErrorInvalidRequest", "title is required")
            task = {"id": f"task-{next(self._ids)}", "status": "notStarted", **body}
            self.tasks[route[3]].append(task)
            return FakeResponse.json(task, status=201)
        return self._error(404, "ResourceNotFound", f"Resource not found for the segment '{route[-1]}'.")

    def _folder_json(self, folder: FakeFolder) -> dict[str, Any]:
        children = [f for f in self.folders.values() if f.parent_id == folder.id]
        in_folder = [m for m in self.messages.values() if m.folder_id == folder.id and not m.removed]
        return {
            "id": folder.id,
            "displayName": folder.display_name,
            "parentFolderId": folder.parent_id or "root",
            "childFolderCount": len(children),
            "unreadItemCount": sum(1 for m in in_folder if not m.is_read),
            "totalItemCount": len(in_folder),
            "isHidden": False,
        }

    def _folder_list(self, request: FakeRequest, folders: list[FakeFolder], path: str) -> FakeResponse:
        top = max(1, min(int(request.arg("$top", "10") or 10), self.max_page_size))
        skip = int(request.arg("$skip", "0") or 0)
        page = folders[skip : skip + top]
        body: dict[str, Any] = {"value": [self._folder_json(f) for f in page]}
        if skip + top < len(folders):
            body["@odata.nextLink"] = f"{self.url}/v1.0/{path}?{urlencode({'$top': top, '$skip': skip + top})}"
        return FakeResponse.json(body)

    def _find_folder(self, key: str) -> FakeFolder | None:
        return self.folders.get(key) or next((f for f in self.folders.values() if f.well_known == key.lower()), None)

    def _mail_folders(self, request: FakeRequest, rest: list[str]) -> FakeResponse:
        if not rest:
            top_level = [f for f in self.folders.values() if f.parent_id is None]
            return self._folder_list(request, top_level, "me/mailFolders")
        folder = self._find_folder(rest[0])
        if folder is None:
            return self._error(404, "ErrorItemNotFound", "The specified object was not found in the store.")
        if len(rest) == 1:
            return FakeResponse.json(self._folder_json(folder))
        if rest[1:] == ["childFolders"]:
            children = [f for f in self.folders.values() if f.parent_id == folder.id]
            return self._folder_list(request, children, f"me/mailFolders/{quote(folder.id, safe='')}/childFolders")
        if rest[1:] == ["messages", "delta"]:
            return self._delta(request, folder)
        return self._error(404, "ResourceNotFound", "Unsupported folder path")

    def _delta(self, request: FakeRequest, folder: FakeFolder) -> FakeResponse:
        """since = last delta's seq (0 first time); snapshot = seq when the round started; offset = paging."""
        token = request.arg("$deltatoken") or request.arg("$skiptoken")
        if token:
            try:
                state = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
            except ValueError:
                return self._error(400, "BadRequest", "Malformed token")
            if state["epoch"] != self.delta_epoch or state["folder"] != folder.id:
                return self._error(410, "SyncStateNotFound", "The sync state generation is not found.")
            since, snapshot, offset = state["since"], state.get("snapshot", self.seq), state.get("offset", 0)
            if "$deltatoken" in request.query:
                snapshot, offset = self.seq, 0
        else:
            since, snapshot, offset = 0, self.seq, 0
        prefer = request.headers.get("prefer", "")
        size = self.max_page_size
        for preference in prefer.split(","):
            name, _, value = preference.strip().partition("=")
            if name == "odata.maxpagesize" and value.isdigit():
                size = max(1, min(int(value), 1000))
        # What changed in this folder, in order: messages there now, and (after the first round) those that left.
        changed: list[tuple[int, FakeGraphMessage | str]] = [
            (m.changed_seq, m)
            for m in self.messages.values()
            if m.folder_id == folder.id and not m.removed and since < m.changed_seq <= snapshot
        ]
        if since:
            changed += [(seq, mid) for fid, mid, seq in self.tombstones if fid == folder.id and since < seq <= snapshot]
        changed.sort(key=lambda entry: entry[0])
        # Graph reports each item once per round, as it is at the end of it: a message that left and came back
        # is only "here", one that came and left only "removed".
        last: dict[str, tuple[int, FakeGraphMessage | str]] = {}
        for seq, entry in changed:
            last[entry if isinstance(entry, str) else entry.id] = (seq, entry)
        changed = sorted(last.values(), key=lambda entry: entry[0])
        page = [entry for _, entry in changed[offset : offset + size]]
        items: list[dict[str, Any]] = []
        for message in page:
            if isinstance(message, str):
                items.append({"id": message, "@removed": {"reason": "deleted"}})
                continue
            items.append(
                {
                    "@odata.type": "#microsoft.graph.message",
                    "id": message.id,
                    "conversationId": message.conversation_id,
                    "isRead": message.is_read,
                    "flag": {"flagStatus": "flagged" if message.flagged else "notFlagged"},
                    "categories": list(message.categories),
                    "receivedDateTime": "2026-11-02T10:00:00Z",
                }
            )
        base = f"{self.url}/v1.0/me/mailFolders/{quote(folder.id, safe='')}/messages/delta"
        body: dict[str, Any] = {"value": items}
        if offset + size < len(changed):
            skip = {"epoch": self.delta_epoch, "folder": folder.id, "since": since, "snapshot": snapshot}
            skip["offset"] = offset + size
            body["@odata.nextLink"] = f"{base}?$skiptoken={b64url(json.dumps(skip).encode())}"
        else:
            delta = {"epoch": self.delta_epoch, "folder": folder.id, "since": snapshot}
            body["@odata.deltaLink"] = f"{base}?$deltatoken={b64url(json.dumps(delta).encode())}"
        return FakeResponse.json(body)

    def _search(self, request: FakeRequest) -> FakeResponse:
        """$search="words": messages whose subject, sender or text contain every word (a KQL subset)."""
        words = request.arg("$search").strip('"').lower().split()
        top = max(1, int(request.arg("$top", "10") or 10))
        found = [
            m for m in self.messages.values() if not m.removed and all(w in searchable_text(m.mime) for w in words)
        ]
        return FakeResponse.json({"value": [{"id": m.id} for m in found[:top]]})

    def _message_json(self, message: FakeGraphMessage) -> dict[str, Any]:
        return {
            "id": message.id,
            "parentFolderId": message.folder_id,
            "conversationId": message.conversation_id,
            "isRead": message.is_read,
            "flag": {"flagStatus": "flagged" if message.flagged else "notFlagged"},
            "categories": list(message.categories),
        }

    def _change_message(self, request: FakeRequest, message_id: str, rest: list[str]) -> FakeResponse:
        """PATCH /me/messages/{id} (isRead, flag, categories) and POST /me/messages/{id}/move {destinationId}."""
        if "Mail.ReadWrite" not in self.token_scopes.get(request.bearer(), set()):
            return self._error(403, "ErrorAccessDenied", "Access is denied. Check credentials and try again.")
        message = self.messages.get(message_id)
        if message is None or message.removed:
            return self._error(404, "ErrorItemNotFound", "The specified object was not found in the store.")
        body = json.loads(request.body or b"{}")
        if request.method == "PATCH" and not rest:
            flag = body.get("flag") if isinstance(body.get("flag"), dict) else {}
            status = (flag or {}).get("flagStatus")
            if status not in (None, "flagged", "notFlagged", "complete"):
                return self._error(400, "ErrorInvalidRequest", f"Invalid flagStatus {status!r}")
            categories = body.get("categories")
            if categories is not None and not (
                isinstance(categories, list) and all(isinstance(item, str) for item in categories)
            ):
                return self._error(400, "ErrorInvalidRequest", "categories must be a list of strings")
            self.update_message(
                message_id,
                is_read=bool(body["isRead"]) if "isRead" in body else None,
                flagged=None if status is None else status == "flagged",
                categories=categories,
            )
            return FakeResponse.json(self._message_json(message))
        if request.method == "POST" and rest == ["move"]:
            target = self._find_folder(str(body.get("destinationId") or ""))
            if target is None:
                return self._error(400, "ErrorInvalidIdMalformed", "Id is malformed.")
            self.move_message(message_id, target.id)
            return FakeResponse.json(self._message_json(message), status=201)
        return self._error(405, "ErrorInvalidRequest", "The OData request is not supported.")

    def _message(self, message_id: str, rest: list[str]) -> FakeResponse:
        message = self.messages.get(message_id)
        if message is None or message.removed:
            return self._error(404, "ErrorItemNotFound", "The specified object was not found in the store.")
        if not rest:
            return FakeResponse.json(self._message_json(message))
        if rest == ["$value"]:
            return FakeResponse(200, message.mime, {"Content-Type": "text/plain"})
        if rest == ["attachments"]:
            return FakeResponse.json(
                {
                    "value": [
                        {
                            "@odata.type": "#microsoft.graph.fileAttachment",
                            "id": attachment.id,
                            "name": attachment.name,
                            "contentType": attachment.content_type,
                            "size": len(attachment.content) + 180,  # Graph counts some overhead
                            "isInline": attachment.is_inline,
                            "contentId": attachment.content_id or None,
                        }
                        for attachment in message.attachments
                    ]
                }
            )
        if len(rest) == 3 and rest[0] == "attachments" and rest[2] == "$value":
            for attachment in message.attachments:
                if attachment.id == rest[1]:
                    return FakeResponse(200, attachment.content, {"Content-Type": attachment.content_type})
            return self._error(404, "ErrorItemNotFound", "Attachment not found.")
        return self._error(404, "ResourceNotFound", "Unsupported message path")


def follow_consent(graph: FakeGraphServer, location: str) -> str:
    """Play the user's browser on the fake authorize page; returns the callback path for the test client."""
    import requests

    assert location.startswith(f"{graph.https_base}/{graph.tenant}/oauth2/v2.0/authorize?")
    answer = requests.get(location, allow_redirects=False, timeout=10)
    assert answer.status_code == 302
    back = urlsplit(answer.headers["Location"])
    assert back.netloc == "testserver"
    return f"{back.path}?{back.query}"


def connect_outlook(client: Any, graph: FakeGraphServer, query: str = "") -> Any:
    """Connect an Outlook account through the real OAuth views (client: a logged-in Django test client)."""
    from apps.accounts.models import MailAccount

    response = client.get(f"/mail/oauth/outlook/connect/{query}")
    assert response.status_code == 302, response.content
    callback = client.get(follow_consent(graph, response["Location"]))
    assert callback.status_code == 302, callback.content
    return MailAccount.objects.get(provider="outlook", address=graph.address)
