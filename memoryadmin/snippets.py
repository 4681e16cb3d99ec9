"""The client configuration shown once after a token is created: Claude Code, Codex, Cursor and
VS Code connecting to this server's /mcp with that token (docs/agents.md, "Connect your agent").

Each text is built with the format's own quoting (shlex for the shell, json for JSON and for
TOML basic strings, which share JSON's escapes), so a URL or a secret can not break out of it.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

SERVER_NAME = "memoryadmin"
TOKEN_VARIABLE = "MEMORYADMIN_TOKEN"  # noqa: S105 - the name of an environment variable


@dataclass(frozen=True)
class Snippet:
    client: str
    slug: str
    where: str  # the file or the place it goes
    text: str
    note: str = ""


def client_snippets(mcp_url: str, secret: str) -> list[Snippet]:
    export = f"export {TOKEN_VARIABLE}={shlex.quote(secret)}"
    claude = (
        f"claude mcp add --transport http {SERVER_NAME} {shlex.quote(mcp_url)} \\\n"
        f"  --header {shlex.quote('Authorization: Bearer ' + secret)}"
    )
    codex = (
        f"{export}\n\n"
        f"# ~/.codex/config.toml\n"
        f"[mcp_servers.{SERVER_NAME}]\n"
        f"url = {json.dumps(mcp_url)}\n"
        f"bearer_token_env_var = {json.dumps(TOKEN_VARIABLE)}"
    )
    cursor = {
        "mcpServers": {
            SERVER_NAME: {
                "url": mcp_url,
                "headers": {"Authorization": f"Bearer ${{env:{TOKEN_VARIABLE}}}"},
            }
        }
    }
    vscode = {
        "inputs": [
            {
                "type": "promptString",
                "id": "memoryadmin-token",
                "description": "memoryadmin API token",
                "password": True,
            }
        ],
        "servers": {
            SERVER_NAME: {
                "type": "http",
                "url": mcp_url,
                "headers": {"Authorization": "Bearer ${input:memoryadmin-token}"},
            }
        },
    }
    return [
        Snippet("Claude Code", "claude", "a terminal", claude),
        Snippet(
            "Codex",
            "codex",
            "your shell profile, then ~/.codex/config.toml",
            codex,
            "Codex reads the token from the environment variable; restart Codex after setting it.",
        ),
        Snippet(
            "Cursor",
            "cursor",
            "your shell profile, then .cursor/mcp.json (or ~/.cursor/mcp.json)",
            f"{export}\n\n" + json.dumps(cursor, indent=2),
            "Cursor fills ${env:…} from the environment it starts in: the secret stays out of the "
            "project file.",
        ),
        Snippet(
            "VS Code",
            "vscode",
            ".vscode/mcp.json",
            json.dumps(vscode, indent=2),
            "VS Code asks for the token the first time it starts the server and stores it "
            "securely: paste the token above.",
        ),
    ]
