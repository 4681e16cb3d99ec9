"""The one error the agent operations raise: a status, a stable code, a message, details.

REST answers it as `{"error": {"code", "message", "details"}}` with the status; MCP as a tool
error whose text carries the same code (bundles/mcp.py)."""

from __future__ import annotations

from typing import Any


class AgentError(Exception):
    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.details = status, code, message, details

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}
