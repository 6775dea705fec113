"""Starting points for a first director: plain data (prompts, agents, tools, a suggested filter), written
out through orchestration's and routing's actions by apps.setup.actions.create_director_from_template."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class AgentTemplate:
    name: str
    slug: str
    summary: str
    prompt: str
    tools: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DirectorTemplate:
    key: str
    name: str
    description: str
    prompt: str
    agents: tuple[AgentTemplate, ...] = field(default_factory=tuple)
    filter_field: str = "from"
    filter_pattern: str = ""
    filter_hint: str = ""


CLIENT_SUPPORT = DirectorTemplate(
    key="client-support",
    name="Client support manager",
    description="Reads client emails, has the psychologist gauge the client's mood and the response agent "
    "draft a reply; you review the draft in the results.",
    prompt=(
        "You manage client support as {{director.name}}. For each client email: first ask the psychologist how "
        "the client feels and what they need, then give the response agent that analysis and ask for a reply "
        "draft. Save the analysis and the draft to the workspace (paths analysis.md and reply.md) and push "
        "them to the inbox with a one-line summary."
    ),
    agents=(
        AgentTemplate(
            name="Psychologist",
            slug="psychologist",
            summary="Reads the client's tone and mood, notes what they need, and remembers it for next time.",
            prompt=(
                "You analyse the emotional state of a client from their email: mood, urgency, frustration or "
                "satisfaction, and what they actually need. Check your memories about this client first and "
                "add a short memory about their current state. Answer with a brief analysis in markdown.\n\n"
                "Memories:\n{{memories}}"
            ),
            tools=("memory_search", "memory_add"),
        ),
        AgentTemplate(
            name="Response agent",
            slug="response-agent",
            summary="Drafts a reply in the right tone, using the analysis, the calendar and shared files.",
            prompt=(
                "You draft replies to client emails. Use the director's analysis for tone, be concrete and "
                "short, propose times from the calendar when a meeting is asked for, and add a to-do for "
                "promised follow-ups. Return the draft reply as markdown; nothing is sent."
            ),
            tools=("memory_search", "calendar_read", "todo_add", "filesystem_search", "filesystem_retrieve"),
        ),
    ),
    filter_field="from",
    filter_pattern=r"client.*@domain\.com",
    filter_hint="Route the mail of your clients here, e.g. a sender address pattern.",
)

TRIAGE = DirectorTemplate(
    key="triage",
    name="Inbox triage",
    description="Summarises each routed email in three lines and suggests the next action.",
    prompt=(
        "Summarise each email in at most three lines, say whether it needs an answer, and suggest the "
        "next action. Save the summary to the workspace as summary.md and push it to the inbox when it needs "
        "the user's attention."
    ),
    filter_field="subject",
    filter_pattern="urgent|asap",
    filter_hint="Route by subject words, e.g. urgent mail.",
)

TEMPLATES: tuple[DirectorTemplate, ...] = (CLIENT_SUPPORT, TRIAGE)
BY_KEY = {template.key: template for template in TEMPLATES}
