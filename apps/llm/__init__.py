"""The project's LLM layer (see client.py and tools.py); shared by orchestration, ask and organization."""

from mailagent.llm.client import (
    ChatResult,
    LLMConfig,
    LLMError,
    ProviderEventData,
    ToolCall,
    chat,
    parse_arguments,
    redact,
)
from mailagent.llm.tools import LoopOutcome, Tool, ToolCallRecord, ToolFailure, run_tool_loop

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
