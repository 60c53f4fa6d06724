"""The Python `mcp` package's client against `agentls mcp` over stdio.

Usage: client_calls.py AGENTLS WORKSPACE

Lists the tools, reads and edits a file, greps, runs a command in the sandbox, and
checks that a path outside the workspace and a forbidden command are refused. Exits
non-zero with a message on the first broken expectation.
"""

import asyncio
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client


def expect(cond, what):
    if not cond:
        raise SystemExit(f"FAILED: {what}")


def text(result):
    return "".join(c.text for c in result.content if c.type == "text")


async def main():
    agentls, workspace = sys.argv[1], Path(sys.argv[2])
    params = StdioServerParameters(command=agentls, args=["mcp", "--workspace", str(workspace)])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            expect(init.server_info.name == "agentls", f"server {init.server_info}")
            tools = {t.name: t for t in (await session.list_tools()).tools}
            for name in ["read_file", "grep", "symbols", "repo_map", "str_replace", "run_command"]:
                expect(name in tools, f"{name} not served: {sorted(tools)}")
            expect("task" not in tools, "task served")
            expect(tools["read_file"].annotations.read_only_hint, "read_file not read-only")
            expect(
                tools["str_replace"].input_schema["properties"].get("old_string"),
                "str_replace schema",
            )

            r = await session.call_tool("read_file", {"path": "calc.py"})
            expect(not r.is_error and "return a - b" in text(r), f"read {text(r)}")
            r = await session.call_tool(
                "str_replace",
                {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
            )
            expect(not r.is_error, f"edit {text(r)}")
            expect("return a + b" in (workspace / "calc.py").read_text(), "edit not on disk")
            r = await session.call_tool("grep", {"pattern": "a \\+ b"})
            expect(not r.is_error and "calc.py" in text(r), f"grep {text(r)}")
            r = await session.call_tool(
                "run_command", {"command": "python3 -c 'import calc; print(calc.add(2, 3))'"}
            )
            expect(not r.is_error and "5" in text(r), f"command {text(r)}")

            # Refused: outside the workspace, a forbidden command.
            r = await session.call_tool("read_file", {"path": "../outside.txt"})
            expect(r.is_error, f"read outside: {text(r)}")
            r = await session.call_tool("write_file", {"path": "../outside.txt", "content": "x"})
            expect(r.is_error, f"write outside: {text(r)}")
            expect(not (workspace.parent / "outside.txt").exists(), "wrote outside")
            r = await session.call_tool("run_command", {"command": "sudo true"})
            expect(r.is_error, f"sudo: {text(r)}")
            r = await session.call_tool("no_such_tool", {})
            expect(r.is_error and "no tool" in text(r), f"unknown tool: {text(r)}")
    print(f"ok: {len(tools)} tools served, calls and refusals as expected")


asyncio.run(main())
