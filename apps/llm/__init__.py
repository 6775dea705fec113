"""The project's one home for language models: ApiConfig (models.py), `llm_config(api_config)` (configs.py),
the OpenAI-compatible client (client.py) and the tool loop (tools.py); used by orchestration, ask and
organization. This module re-exports the client only: it is imported before the app registry is ready."""

from apps.llm.client import (
    ChatResult,
    LLMConfig,
    LLMError,
    ProviderEventData,
    ToolCall,
    chat,
    parse_arguments,
    redact,
)
from apps.llm.tools import LoopOutcome, Tool, ToolCallRecord, ToolFailure, run_tool_loop

__all__ = [
    "ChatResult",
    "LLMConfig",
    "LLMError",
    "LoopOutcome",
    "ProviderEventData",
    "Tool",
    "ToolCall",
    "ToolCallRecord",
    "ToolFailure",
    "chat",
    "parse_arguments",
    "redact",
    "run_tool_loop",
]
