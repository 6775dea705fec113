"""The mailbox MCP tools' outputs: pydantic models, so every tool declares an output schema and returns
structured content (and the same JSON as text for clients that read only text)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Person(BaseModel):
    name: str = Field(description="Display name, may be empty")
    address: str = Field(description="Email address")


class MailHit(BaseModel):
    message_id: int = Field(description="The best matching message of the thread: pass it to read_message")
    thread_id: int | None = Field(description="Its thread: pass it to read_thread (null for a loose message)")
    rfc_message_id: str = Field(description="The RFC Message-ID without angle brackets (sha256:… when it had none)")
    subject: str
    sender: str = Field(description="From: the sender's name and address")
    to: list[Person]
    date: str | None = Field(description="ISO 8601")
    snippet: str = Field(description="Plain text around the matching words")
    folders: list[str] = Field(description="Folders the message is in on the server")
    account: str = Field(description="The account's name")
    unread: bool
    matches: int = Field(description="Messages of this thread that match")


class SearchMailResult(BaseModel):
    query: str
    count: int = Field(description="Matching messages (every keyword match, meaning matches above the floor)")
    results: list[MailHit]
    next_cursor: str | None = Field(description="Pass as cursor for the next page; null on the last page")
    did_you_mean: str | None = Field(None, description="The query with misspelt words corrected from the index")


class AttachmentInfo(BaseModel):
    attachment_id: int = Field(description="Pass it with the message_id to get_attachment_text")
    filename: str
    mime_type: str
    size: int = Field(description="Bytes")


class MessageOut(BaseModel):
    message_id: int
    thread_id: int | None
    rfc_message_id: str
    account: str
    sender: str
    to: list[Person]
    cc: list[Person]
    date: str | None
    subject: str
    folders: list[str]
    unread: bool
    flagged: bool
    text: str = Field(description="The message's own text (plain text, HTML converted), without quoted history")
    quoted: str = Field(description="Quoted or forwarded history below the message's own text ('' when none)")
    truncated: bool = Field(description="True when text or quoted was cut at the size limit")
    attachments: list[AttachmentInfo]


class ThreadOut(BaseModel):
    thread_id: int
    subject: str
    account: str
    message_count: int
    messages: list[MessageOut] = Field(description="Oldest first")
    truncated: bool = Field(description="True when later messages were left out at the size limit")


class FolderOut(BaseModel):
    name: str = Field(description="The provider's folder name (use it with in: in search_mail, or to move)")
    label: str
    role: str = Field(description="inbox, sent, drafts, archive, trash, spam or ''")
    total: int
    unread: int


class AccountFolders(BaseModel):
    account: str = Field(description="The account's name (use it with account: in search_mail)")
    address: str
    folders: list[FolderOut]


class FoldersResult(BaseModel):
    accounts: list[AccountFolders]


class AttachmentText(BaseModel):
    message_id: int
    attachment_id: int
    filename: str
    mime_type: str
    text: str = Field(description="The text extracted from the file ('' when it has none)")
    truncated: bool
    error: str = Field(description="Why no text could be extracted ('' when it worked)")


class FileHit(BaseModel):
    file_id: int = Field(description="Pass it to read_file_text")
    path: str = Field(description="Path inside the library")
    title: str
    mime_type: str
    snippet: str
    date: str | None


class SearchFilesResult(BaseModel):
    query: str
    count: int
    results: list[FileHit]
    next_cursor: str | None


class FileText(BaseModel):
    file_id: int
    path: str
    mime_type: str
    text: str
    truncated: bool
    error: str = Field(description="Why the file has no text ('' when it has)")


class Evidence(BaseModel):
    message_id: int | None = Field(description="The message the answer rests on (null if it is gone)")
    thread_id: int | None
    subject: str
    sender: str
    date: str | None
    snippet: str
    attachment: str | None = Field(None, description="The attachment the evidence came from, by file name")


class AskResult(BaseModel):
    run_id: str
    conversation_id: str = Field(description="Pass it to ask again to ask a follow-up in the same conversation")
    status: str = Field(description="done or error")
    answer: str
    answer_mode: str = Field(description="How the answer was made: extractive, llm, …")
    evidence: list[Evidence]
    error: str


class DraftOut(BaseModel):
    draft_id: int = Field(description="Pass it to request_send")
    account: str
    to: list[Person]
    cc: list[Person]
    subject: str
    status: str = Field(description="draft, sending, sent or failed")
    source: str = Field(description="Where the draft came from: mcp, ask_draft, workspace_item")
    in_reply_to_message_id: int | None
    updated: str
    url: str = Field(description="The draft in the app (the user edits or sends it there)")


class DraftsResult(BaseModel):
    drafts: list[DraftOut] = Field(description="Open drafts first, then sent ones, newest first")


class ApprovalOut(BaseModel):
    approval_id: int = Field(description="Pass it to approval_status")
    kind: str = Field(description="reply_send or mail_action")
    status: str = Field(description="pending (waiting for the user), sending, done, failed or rejected")
    summary: str
    error: str
    created: str
    decided: str | None
    performed: str | None
    url: str = Field(description="Where the user decides")


class ActionRequested(BaseModel):
    approvals: list[ApprovalOut] = Field(description="One approval per account the messages are in")
