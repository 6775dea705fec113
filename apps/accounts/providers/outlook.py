"""Outlook / Microsoft 365 through Microsoft Graph: per-folder delta queries, MIME for every new message.

- Folders: /me/mailFolders (paged) and their childFolders, recursively; well-known folders get a role.
- Per folder: /me/mailFolders/{id}/messages/delta. Every page is stored together with the link that
  follows it (nextLink while paging, deltaLink at the end) as the folder's sync_token, so a crash resumes
  from the last committed page. New messages are fetched as MIME (/me/messages/{id}/$value); messages we
  already have only get their read/flag state updated. An `@removed` entry removes the location in that
  folder (deleted, or moved away); an id stored in another folder is the message having moved here
  (immutable ids, global_id): its location moves, nothing is downloaded.
- Write-back (Mail.ReadWrite, asked for alone): PATCH /me/messages/{id} (isRead, flag.flagStatus) and
  POST /me/messages/{id}/move (destinationId = the target folder's id; archive/trash = the folders with
  those roles).
- Tags are the message's categories (each name that can be a tag: no spaces or quotes), kept on the location
  in the keyword form of apps/accounts/labels.py and followed through the delta; a tag added or taken off here
  reads the message's categories and PATCHes the whole list with it added, or without every category that
  compares equal to it (as tags compare, case-insensitively).
- An expired delta link (410 Gone / syncStateNotFound) resets the folder and runs its delta from scratch;
  stored messages are recognised by id, so nothing is stored twice. A round from scratch lists no
  '@removed', so what is stored and not listed by its end is gone: its nextLinks are stored marked
  (SCRATCH_ROUND), and a round interrupted by a crash starts over (metadata pages only: the MIME of what was
  stored is not fetched again) instead of resuming where nobody can tell what its first pages listed.
- Immutable ids (Prefer: IdType="ImmutableId") keep a message's id stable when it moves between folders.
- 429/503/504: wait as told by Retry-After (capped, limited attempts), then ProviderError("rate_limited").
- Tokens come from MSAL (apps.accounts.providers.oauth_tokens.OutlookTokenSource); Graph has no signature API, so the
  Outlook signature is the user's custom text.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import requests

from apps.accounts.labels import InvalidTag, clean_tag_name, label_to_keyword, tag_key
from apps.accounts.oauth_settings import (
    HTTP_TIMEOUT_SECONDS,
    OUTLOOK_SEND_SCOPE,
    OUTLOOK_WRITE_SCOPE,
    graph_api_endpoint,
)
from apps.accounts.providers.base import (
    Checkpoint,
    FolderInfo,
    MailProvider,
    ProviderError,
    RemoteMessage,
    SyncSink,
    WriteBackPlace,
)
from apps.accounts.providers.oauth_http import RateLimitBackoff, parse_retry_after
from apps.accounts.providers.oauth_tokens import OutlookTokenSource

if TYPE_CHECKING:
    from apps.accounts.models import Attachment, MailAccount

logger = logging.getLogger(__name__)

WELL_KNOWN_ROLES = {
    "inbox": "inbox",
    "sentitems": "sent",
    "drafts": "drafts",
    "deleteditems": "trash",
    "junkemail": "spam",
    "archive": "archive",
}
# The sync_token of a folder whose round from scratch is under way: this prefix, then the round's nextLink.
SCRATCH_ROUND = "scratch-round "
DELTA_EXPIRED_CODES = {"syncstatenotfound", "syncstateinvalid", "resyncrequired"}
RETRY_STATUSES = {429, 503, 504}
MAX_FOLDER_DEPTH = 10
DELTA_SELECT = "id,isRead,flag,conversationId,receivedDateTime,categories"
FLAG_PATCHES: dict[str, dict[str, Any]] = {
    "read": {"isRead": True},
    "unread": {"isRead": False},
    "flag": {"flag": {"flagStatus": "flagged"}},
    "unflag": {"flag": {"flagStatus": "notFlagged"}},
}
MOVE_KINDS = {"move", "archive", "trash"}


class DeltaExpired(Exception):
    """The folder's delta link is no longer valid: resync the folder from scratch."""


@dataclass(slots=True)
class GraphFolder:
    id: str
    path: str
    role: str = ""


def _error_code(response: requests.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    return str(error.get("code") or "") if isinstance(error, dict) else ""


def _error_message(response: requests.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    return str(error.get("message") or "") if isinstance(error, dict) else ""


def graph_error(response: requests.Response, what: str) -> ProviderError:
    status = response.status_code
    code = _error_code(response)
    detail = f"Microsoft Graph {what} failed: HTTP {status} {code}".strip()
    if status == 401:
        return ProviderError(f"{detail}: the stored authorization was not accepted", category="invalid_grant")
    if status == 403:
        return ProviderError(f"{detail}: a required permission was not granted", category="auth")
    if status in RETRY_STATUSES:
        return ProviderError(detail, category="rate_limited")
    if status >= 500:
        return ProviderError(f"{detail}: Microsoft Graph is unavailable", category="network")
    return ProviderError(detail, category="other")


def _graph_get(
    session: requests.Session,
    url: str,
    token: str,
    *,
    params: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> requests.Response:
    try:
        return session.get(
            url,
            params=params,
            headers={**(headers or {}), "Authorization": f"Bearer {token}"},
            timeout=HTTP_TIMEOUT_SECONDS,
        )
    except requests.RequestException as exc:
        raise ProviderError(f"Could not reach Microsoft Graph: {exc}", category="network") from exc


def fetch_graph_me(access_token: str) -> dict[str, Any]:
    """/me with a fresh access token (the connect callback uses it to learn the address)."""
    with requests.Session() as session:
        response = _graph_get(
            session,
            f"{graph_api_endpoint()}/me",
            access_token,
            params={"$select": "displayName,mail,userPrincipalName"},
        )
    if response.status_code != 200:
        raise graph_error(response, "/me")
    return dict(response.json())


class OutlookProvider(MailProvider):
    folder_page_size = 100
    delta_page_size = 50

    def __init__(self, account: MailAccount) -> None:
        super().__init__(account)
        self._tokens = OutlookTokenSource(account)
        self._token: str | None = None
        self._http: requests.Session | None = None

    # --- plumbing -----------------------------------------------------------------------------------

    def _session(self) -> requests.Session:
        if self._http is None:
            self._http = requests.Session()
        return self._http

    def _access_token(self, *, force_refresh: bool = False) -> str:
        if self._token is None or force_refresh:
            self._token = self._tokens.access_token(force_refresh=force_refresh)
        return self._token

    def _url(self, path_or_url: str) -> str:
        if path_or_url.startswith(("http://", "https://")):
            return path_or_url
        return f"{graph_api_endpoint()}/{path_or_url.lstrip('/')}"

    def _get(
        self, path_or_url: str, *, params: dict[str, Any] | None = None, prefer: list[str] | None = None
    ) -> requests.Response:
        """GET with auth, one token refresh on 401, and Retry-After backoff; returns any other response."""
        headers = {"Prefer": ", ".join(['IdType="ImmutableId"', *(prefer or [])])}
        backoff = RateLimitBackoff("Microsoft Graph")
        refreshed = False
        while True:
            token = self._access_token()
            response = _graph_get(self._session(), self._url(path_or_url), token, params=params, headers=headers)
            if response.status_code == 401 and not refreshed:
                refreshed = True
                self._access_token(force_refresh=True)
                continue
            if response.status_code in RETRY_STATUSES:
                backoff.wait(parse_retry_after(response.headers.get("Retry-After")))
                continue
            return response

    def _json(self, path_or_url: str, *, what: str, **kwargs: Any) -> dict[str, Any]:
        response = self._get(path_or_url, **kwargs)
        if response.status_code != 200:
            raise graph_error(response, what)
        try:
            return dict(response.json())
        except ValueError as exc:
            raise ProviderError(f"Microsoft Graph {what} returned invalid JSON", category="other") from exc

    def _pages(self, path: str, *, what: str, params: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        url: str | None = path
        while url:
            page = self._json(url, what=what, params=params)
            params = None  # nextLink carries the query
            yield from (item for item in page.get("value") or [] if isinstance(item, dict))
            url = page.get("@odata.nextLink")

    # --- MailProvider -------------------------------------------------------------------------------

    def test_connection(self) -> None:
        if not self._tokens.has_refresh_token():
            raise ProviderError(
                "No refresh token is stored: the account stops working when the access token expires; connect it again",
                category="missing_refresh_token",
            )
        self._json("me", what="/me", params={"$select": "id,mail,userPrincipalName"})

    def sync(self, sink: SyncSink) -> None:
        folders = self._list_folders()
        states = {folder.id: sink.folder_state(folder.id) for folder in folders}
        # Roles are looked up once, when a folder is first seen (six small requests).
        roles = self._well_known_roles() if any(state is None for state in states.values()) else {}
        for folder in folders:
            state = states[folder.id]
            folder.role = roles.get(folder.id, "") or (state.role if state is not None else "")
        for folder in folders:
            sink.ensure_folder(FolderInfo(name=folder.id, display_name=folder.path, role=folder.role))
        for folder in folders:
            self._sync_folder(sink, folder)

    def _list_folders(self) -> list[GraphFolder]:
        folders: list[GraphFolder] = []
        params = {"$top": self.folder_page_size}

        def walk(path: str, prefix: str, depth: int) -> None:
            for item in self._pages(path, what="mailFolders", params=dict(params)):
                folder = GraphFolder(id=str(item["id"]), path=f"{prefix}{item.get('displayName') or item['id']}")
                folders.append(folder)
                if int(item.get("childFolderCount") or 0) > 0 and depth < MAX_FOLDER_DEPTH:
                    walk(f"me/mailFolders/{quote(folder.id, safe='')}/childFolders", f"{folder.path}/", depth + 1)

        walk("me/mailFolders", "", 0)
        return folders

    def _well_known_roles(self) -> dict[str, str]:
        roles: dict[str, str] = {}
        for name, role in WELL_KNOWN_ROLES.items():
            response = self._get(f"me/mailFolders/{name}", params={"$select": "id"})
            if response.status_code == 200:
                roles[str(response.json().get("id"))] = role
            elif response.status_code not in (400, 404):
                raise graph_error(response, f"mailFolders/{name}")
        return roles

    def _initial_delta_url(self, folder_id: str) -> str:
        return self._url(f"me/mailFolders/{quote(folder_id, safe='')}/messages/delta?$select={DELTA_SELECT}")

    def _delta_page(self, url: str) -> dict[str, Any]:
        response = self._get(url, prefer=[f"odata.maxpagesize={self.delta_page_size}"])
        if response.status_code == 410 or (
            400 <= response.status_code < 500 and _error_code(response).lower() in DELTA_EXPIRED_CODES
        ):
            raise DeltaExpired(_error_code(response) or "410 Gone")
        if response.status_code != 200:
            raise graph_error(response, "messages/delta")
        return dict(response.json())

    def _sync_folder(self, sink: SyncSink, folder: GraphFolder) -> None:
        state = sink.folder_state(folder.id)
        token = state.sync_token if state is not None else ""
        restarted = False
        listed: set[str] | None
        # A round from scratch lists everything in the folder and no '@removed': whatever is stored there and not
        # listed by its end left while no delta link covered it. That is known only for a round run whole in one
        # process, so an interrupted one (its token marked SCRATCH_ROUND) starts over.
        if token and not token.startswith(SCRATCH_ROUND):
            url, listed = token, None
        else:
            url, listed = self._initial_delta_url(folder.id), set()
        while True:
            try:
                page = self._delta_page(url)
            except DeltaExpired as exc:
                if restarted:
                    raise ProviderError(
                        f"Delta sync of {folder.path!r} keeps failing ({exc})", category="other"
                    ) from exc
                logger.warning(
                    "account %s: delta link of %r expired (%s); resyncing", self.account.pk, folder.path, exc
                )
                sink.reset_folder(folder.id, uidvalidity=None)
                url, restarted, listed = self._initial_delta_url(folder.id), True, set()
                continue
            # One entry per id, the last one: it says where the message is now (left, or here with these flags).
            latest = {
                str(item["id"]): item for item in page.get("value") or [] if isinstance(item, dict) and item.get("id")
            }
            entries = list(latest.values())
            removed = [str(item["id"]) for item in entries if "@removed" in item]
            items = [item for item in entries if "@removed" not in item]
            places = sink.places_of([str(item["id"]) for item in entries])
            flags: dict[str, tuple[bool, bool]] = {}
            moves: dict[str, tuple[str, bool, bool]] = {}
            for item in items:
                message_id = str(item["id"])
                if [name for name, _ in places.get(message_id, [])] == [folder.id]:
                    flags[message_id] = _flags(item)
                else:  # stored elsewhere (moved here), or only as a row (its old place went earlier), or new
                    moves[message_id] = (folder.id, *_flags(item))
            unknown = sink.move_places(moves)
            sink.update_flags(flags, folder=folder.id)
            sink.update_keywords(
                {str(item["id"]): _category_keywords(item) for item in items if str(item["id"]) not in unknown},
                folder=folder.id,
            )
            gone = [location for mid in removed for name, location in places.get(mid, []) if name == folder.id]
            if gone:
                sink.remove_places(gone)
            batch: list[RemoteMessage] = []
            for item in items:
                message_id = str(item["id"])
                if message_id not in unknown:
                    continue
                raw = self._mime(message_id)
                if raw is None:
                    continue
                seen, flagged = _flags(item)
                batch.append(
                    RemoteMessage(
                        provider_id=message_id,
                        raw=raw,
                        folder=folder.id,
                        seen=seen,
                        flagged=flagged,
                        provider_thread_id=str(item.get("conversationId") or ""),
                        global_id=True,
                        keywords=_category_keywords(item),
                    )
                )
            next_link = page.get("@odata.nextLink")
            delta_link = page.get("@odata.deltaLink")
            cursor = next_link or delta_link
            if listed is not None and next_link:
                cursor = SCRATCH_ROUND + str(next_link)
            if listed is not None:
                listed.update(str(item["id"]) for item in items)
                if not next_link:
                    left = [p.location_id for mid, p in sink.folder_places(folder.id).items() if mid not in listed]
                    if left:
                        sink.remove_places(left)
            sink.store_batch(batch, Checkpoint(folder=folder.id, sync_token=cursor) if cursor else None)
            if not next_link:
                return
            url = str(next_link)

    def write_back(self, *, kind: str, places: list[WriteBackPlace], target: str = "", tag: str = "") -> str:
        """PATCH isRead / flag, or POST …/move, per immutable id; an id Graph no longer has is reported."""
        folder_of: dict[str, str] = {}
        for place in places:
            folder_of.setdefault(place.provider_id, place.folder)
        said: list[str] = []
        for message_id, folder in folder_of.items():
            path = f"me/messages/{quote(message_id, safe='')}"
            if kind in FLAG_PATCHES:
                response = self._write("PATCH", path, FLAG_PATCHES[kind])
                what = "PATCH " + ", ".join(f"{key}={value}" for key, value in FLAG_PATCHES[kind].items())
            elif kind in ("tag", "untag"):
                current = self._get(path, params={"$select": "id,categories"})
                if current.status_code == 404:
                    said.append(f"{message_id}: already gone from Outlook")
                    continue
                if current.status_code != 200:
                    raise graph_error(current, "message categories")
                before = [str(item) for item in current.json().get("categories") or []]
                others = [name for name in before if tag_key(name) != tag_key(tag)]
                # Tag: add it unless a category already is it. Untag: drop every category that is it.
                has_it = len(others) < len(before)
                after = others if kind == "untag" else before if has_it else [*before, tag]
                if after == before:
                    said.append(f"{message_id}: categories already {before}")
                    continue
                response = self._write("PATCH", path, {"categories": after})
                what = f"PATCH categories={after}"
            elif kind in MOVE_KINDS:
                if folder == target:
                    said.append(f"{message_id}: already there")
                    continue
                response = self._write("POST", f"{path}/move", {"destinationId": target})
                what = "move"
            else:
                raise ProviderError(f"Unknown write-back {kind!r}", category="unsupported")
            if response.status_code == 404:
                said.append(f"{message_id}: already gone from Outlook")
                continue
            if response.status_code not in (200, 201):
                error = graph_error(response, f"message {what}")
                said_by_graph = _error_message(response)
                raise ProviderError(
                    f"{error}: {said_by_graph}" if said_by_graph else str(error), category=error.category
                )
            answer = response.json() if response.content else {}
            moved_to = f" → folder {answer.get('parentFolderId')}" if kind in MOVE_KINDS else ""
            said.append(f"{message_id}: {what}{moved_to} ({response.status_code})")
        return "\n".join(said) or "nothing to change"

    def _write(self, method: str, path: str, body: dict[str, Any]) -> requests.Response:
        """A write with a Mail.ReadWrite token (asked for alone, so reading never needs the wider grant), one
        refresh on 401, and Retry-After backoff (a throttled request was not carried out)."""
        backoff = RateLimitBackoff("Microsoft Graph")
        refreshed = False
        while True:
            token = self._tokens.access_token(force_refresh=refreshed, scopes=[OUTLOOK_WRITE_SCOPE])
            try:
                response = self._session().request(
                    method,
                    self._url(path),
                    json=body,
                    headers={"Authorization": f"Bearer {token}", "Prefer": 'IdType="ImmutableId"'},
                    timeout=HTTP_TIMEOUT_SECONDS,
                )
            except requests.RequestException as exc:
                raise ProviderError(f"Could not reach Microsoft Graph: {exc}", category="network") from exc
            if response.status_code == 401 and not refreshed:
                refreshed = True
                continue
            if response.status_code in RETRY_STATUSES:
                backoff.wait(parse_retry_after(response.headers.get("Retry-After")))
                continue
            return response

    def _mime(self, message_id: str) -> bytes | None:
        response = self._get(f"me/messages/{quote(message_id, safe='')}/$value")
        if response.status_code == 404:
            logger.info("outlook message %s vanished before it was fetched", message_id)
            return None
        if response.status_code != 200:
            raise graph_error(response, "messages/$value")
        return response.content

    def fetch_attachment(self, attachment: Attachment) -> bytes:
        message_id = attachment.message.provider_id
        base = f"me/messages/{quote(message_id, safe='')}"
        response = self._get(f"{base}/attachments", params={"$select": "id,name,size,contentType,contentId,isInline"})
        if response.status_code == 404:
            raise ProviderError("The message no longer exists in Outlook", category="other")
        if response.status_code != 200:
            raise graph_error(response, "attachments")
        listed = [item for item in response.json().get("value") or [] if isinstance(item, dict)]
        match = _match_attachment(listed, attachment)
        if match is not None:
            content = self._get(f"{base}/attachments/{quote(str(match['id']), safe='')}/$value")
            if content.status_code == 200:
                return content.content
            if content.status_code != 404:
                raise graph_error(content, "attachments/$value")
        return self._attachment_from_mime(message_id, attachment)

    def _attachment_from_mime(self, message_id: str, attachment: Attachment) -> bytes:
        from apps.accounts.parsing import parse_message

        raw = self._mime(message_id)
        if raw is None:
            raise ProviderError("The message no longer exists in Outlook", category="other")
        for part in parse_message(raw, keep_attachment_payloads=True).attachments:
            if part.part_ref == attachment.provider_ref and part.payload is not None:
                return bytes(part.payload)
        raise ProviderError(f"Attachment {attachment.filename!r} was not found in the message", category="other")

    def search(self, query: str, limit: int = 20) -> list[str]:
        """Microsoft Graph's own search (`$search` over the whole mailbox): ids of matching messages."""
        phrase = " ".join(query.replace('"', " ").split())
        if not phrase:
            return []
        params = {"$search": f'"{phrase}"', "$top": max(1, min(int(limit), 50)), "$select": "id"}
        page = self._json("me/messages", what="message search", params=params)
        return [str(item["id"]) for item in page.get("value") or [] if isinstance(item, dict) and item.get("id")]

    def send_mime(self, raw: bytes) -> None:
        """POST /me/sendMail with the whole MIME message (base64), so our Message-ID, In-Reply-To and
        References travel unchanged and Exchange threads the reply; Graph saves it to Sent Items.

        Needs Mail.Send (incremental consent): the token is asked for that scope alone."""
        import base64

        body = base64.b64encode(raw)
        backoff = RateLimitBackoff("Microsoft Graph")
        refreshed = False
        while True:
            token = self._tokens.access_token(force_refresh=refreshed, scopes=[OUTLOOK_SEND_SCOPE])
            try:
                response = self._session().post(
                    self._url("me/sendMail"),
                    data=body,
                    headers={"Authorization": f"Bearer {token}", "Content-Type": "text/plain"},
                    timeout=HTTP_TIMEOUT_SECONDS,
                )
            except requests.RequestException as exc:
                raise ProviderError(f"Could not reach Microsoft Graph: {exc}", category="network") from exc
            if response.status_code == 401 and not refreshed:
                refreshed = True
                continue
            if response.status_code in (429, 503):  # not accepted: safe to try again after the wait
                backoff.wait(parse_retry_after(response.headers.get("Retry-After")))
                continue
            if response.status_code not in (200, 202):
                error = graph_error(response, "sendMail")
                said = _error_message(response)
                if said:  # Graph's own words ("… is not a valid recipient") tell the user what to fix
                    raise ProviderError(f"{error}: {said}", category=error.category)
                raise error
            return

    def close(self) -> None:
        self._tokens.close()
        http, self._http = self._http, None
        if http is not None:
            http.close()


def _category_keywords(item: dict[str, Any]) -> tuple[str, ...]:
    """The message's categories that can be tags, in the keyword form locations keep."""
    found: set[str] = set()
    for category in item.get("categories") or []:
        try:
            found.add(label_to_keyword(clean_tag_name(str(category))))
        except InvalidTag:
            logger.info("outlook category %r cannot be a tag", category)
    return tuple(sorted(found))


def _flags(item: dict[str, Any]) -> tuple[bool, bool]:
    flag = item.get("flag") if isinstance(item.get("flag"), dict) else {}
    return bool(item.get("isRead")), (flag or {}).get("flagStatus") == "flagged"


def _match_attachment(listed: list[dict[str, Any]], attachment: Attachment) -> dict[str, Any] | None:
    """Graph's attachment ids are not in the MIME source: match by content id, then name (+ closest size)."""
    if attachment.content_id:
        wanted = attachment.content_id.strip("<>")
        for item in listed:
            if str(item.get("contentId") or "").strip("<>") == wanted:
                return item
    named = [item for item in listed if attachment.filename and item.get("name") == attachment.filename]
    if not named:
        return None
    # Graph's size includes some overhead, so the closest one wins rather than an exact match.
    return min(named, key=lambda item: abs(int(item.get("size") or 0) - attachment.size))
