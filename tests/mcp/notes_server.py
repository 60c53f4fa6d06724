"""An MCP server built with the Python `mcp` package (MCPServer, formerly FastMCP),
for agentls's MCP client tests. `notes_server.py` serves over stdio;
`notes_server.py http PORT` over streamable HTTP on 127.0.0.1:PORT/mcp."""

import sys
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")


@server.tool()
def lookup(key: str) -> str:
    """The team's note for a key."""
    notes = {"deploy": "Deploys go out on Tuesdays."}
    return notes.get(key, "no note for " + key)


@server.tool()
def slow() -> str:
    """Takes a minute."""
    time.sleep(60)
    return "late"


@server.tool()
def hidden() -> str:
    """Denied by the test's configuration: must never be offered."""
    return "should not be callable"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
