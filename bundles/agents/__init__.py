"""What agents use: search, precheck, get and propose over the team's served memory
(docs/agents.md). Each operation is one service function here; the REST views
(bundles/api/agents.py) and the MCP tools (bundles/mcp.py) are thin faces over them."""
