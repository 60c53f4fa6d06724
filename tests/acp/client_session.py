"""A whole ACP session against `agentls acp`, driven by the Python
`agent-client-protocol` package (a client none of us wrote).

Usage: client_session.py AGENTLS CONFIG WORKSPACE

The scripted model (the e2e test's fixture server) answers three prompts:
1. str_replace in calc.py, then `rm -rf build` (the policy asks; we allow), then "Done.":
   the edit arrives as fs/write_text_file after fs/read_text_file of the same buffer,
   the tool call's update carries the diff, the permission request names the command,
   a usage_update says how full the context window is.
2. str_replace in calc.py while our buffer of it holds an unsaved line: the agent
   reads the buffer (not the disk), plans on it, and the edit lands with the line
   kept; then str_replace in util.py while the user types in it between the agent's
   read and its write: the agent reads the buffer back, sees it changed, writes
   nothing, and the call fails.
3. in "ask before edits" mode, an edit whose permission (with its diff) we refuse:
   nothing is written and the call fails.
4. in "read-only" mode, `/explain calc.py` (one of the slash commands the session
   offers), answered by a write_file call: refused, nothing written.
5. (back in "edit" mode) `rm -rf stale`, which the policy asks about: we pick "Run in
   my terminal" and run it in our terminal (terminal/create, wait_for_exit, output,
   release); the model gets its output.
6. we pick the other model (session/set_config_option); a long command; we cancel
   when it starts: the prompt stops with `cancelled`.
Then a second `agentls acp` loads the session: the conversation comes back as
updates, and a last prompt goes on from it ("I remember."), on the model picked.
Exits non-zero with a message on the first broken expectation.
"""

import asyncio
import os
import sys
from pathlib import Path

from acp import spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    KillTerminalResponse,
    ReleaseTerminalResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)


def expect(cond, what):
    if not cond:
        raise SystemExit(f"FAILED: {what}")


class Editor:
    """An editor: buffers over the disk; writes go to the buffer and are saved."""

    def __init__(self, root: Path):
        self.root = root
        self.buffers: dict[str, str] = {}
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.updates: list = []
        self.permissions: list[str] = []
        self.permission_calls: list = []
        self.permission_options: list[list[str]] = []
        # Terminals the agent asked for: id -> (command line, process).
        self.terminals: dict[str, tuple[str, asyncio.subprocess.Process]] = {}
        self.terminal_text: dict[str, str] = {}
        self.on_update = None
        # path -> (n, text): the user types `text` into the buffer just before the
        # n-th read of `path` is answered.
        self.type_on_read: dict[str, tuple[int, str]] = {}

    async def read_text_file(self, session_id, path, line=None, limit=None, **kw):
        self.reads.append(path)
        text = self.buffers.get(path)
        if text is None:
            text = Path(path).read_text()
        if path in self.type_on_read:
            n, typed = self.type_on_read[path]
            if n <= 1:
                del self.type_on_read[path]
                text = self.buffers[path] = text + typed
            else:
                self.type_on_read[path] = (n - 1, typed)
        return ReadTextFileResponse(content=text)

    async def write_text_file(self, session_id, path, content, **kw):
        self.writes.append(path)
        self.buffers[path] = content
        Path(path).write_text(content)
        return WriteTextFileResponse()

    async def create_terminal(
        self, session_id, command, args=None, env=None, cwd=None, output_byte_limit=None, **kw
    ):
        line = " ".join([command, *(args or [])])
        proc = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=cwd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        tid = f"term-{len(self.terminals) + 1}"
        self.terminals[tid] = (line, proc)
        return CreateTerminalResponse(terminal_id=tid)

    async def wait_for_terminal_exit(self, session_id, terminal_id, **kw):
        _, proc = self.terminals[terminal_id]
        out, _ = await proc.communicate()
        self.terminal_text[terminal_id] = out.decode()
        return WaitForTerminalExitResponse(exit_code=proc.returncode)

    async def terminal_output(self, session_id, terminal_id, **kw):
        _, proc = self.terminals[terminal_id]
        status = None
        if proc.returncode is not None:
            status = TerminalExitStatus(exit_code=proc.returncode)
        return TerminalOutputResponse(
            output=self.terminal_text.get(terminal_id, ""), truncated=False, exit_status=status
        )

    async def kill_terminal(self, session_id, terminal_id, **kw):
        self.terminals[terminal_id][1].kill()
        return KillTerminalResponse()

    async def release_terminal(self, session_id, terminal_id, **kw):
        return ReleaseTerminalResponse()

    async def request_permission(self, session_id, tool_call, options, **kw):
        self.permissions.append(tool_call.title or "")
        self.permission_calls.append(tool_call)
        self.permission_options.append([o.option_id for o in options])
        # Commands are allowed (in the sandbox, or in our terminal when they clean
        # `stale`); edits (asked about in "ask before edits") refused.
        title = tool_call.title or ""
        if "stale" in title:
            pick = next(o for o in options if o.option_id == "terminal")
        else:
            kind = "reject_once" if title.startswith("Edit ") else "allow_once"
            pick = next(o for o in options if o.kind == kind)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=pick.option_id)
        )

    async def session_update(self, session_id, update, **kw):
        self.updates.append(update)
        if self.on_update:
            await self.on_update(update)

    def of_kind(self, kind):
        return [u for u in self.updates if u.session_update == kind]


async def main():
    agentls, config, workspace = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    calc = str(workspace / "calc.py")
    editor = Editor(workspace)
    def spawn():
        return spawn_agent_process(
            editor,
            agentls,
            "acp",
            "--config",
            config,
            "--no-final-check",
            "--trajectory-dir",
            str(workspace.parent / "trajectories"),
            "--sessions-dir",
            str(workspace.parent / "sessions"),
            "--stats-db",
            str(workspace.parent / "stats.sqlite3"),
            env=dict(os.environ),
        )

    async def initialize(conn):
        init = await conn.initialize(
            protocol_version=1,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                terminal=True,
            ),
        )
        expect(init.protocol_version == 1, f"protocol version {init.protocol_version}")
        expect(init.agent_info.name == "agentls", f"agent info {init.agent_info}")
        expect(init.agent_capabilities.load_session, "loadSession not offered")

    async with spawn() as (conn, _proc):
        await initialize(conn)

        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = session.session_id
        modes = [m.id for m in session.modes.available_modes]
        expect(session.modes.current_mode_id == "edit", f"mode {session.modes}")
        expect(modes == ["edit", "ask_before_edits", "read_only"], f"modes {modes}")
        # The model picker: a select of the configured models.
        picker = [o.model_dump(by_alias=True, exclude_none=True) for o in session.config_options]
        expect(
            len(picker) == 1
            and picker[0]["currentValue"] == "fixture"
            and [c["value"] for c in picker[0]["options"]] == ["fixture", "other"],
            f"config options {picker}",
        )

        # 1. An edit through the editor, a permission, a final answer.
        done = await conn.prompt(session_id=sid, prompt=[text_block("Fix add in calc.py")])
        expect(done.stop_reason == "end_turn", f"stop reason {done.stop_reason}")
        expect(calc in editor.reads, f"calc.py not read through the editor: {editor.reads}")
        expect(editor.writes == [calc], f"writes {editor.writes}")
        expect("return a + b" in Path(calc).read_text(), "the fix is not on disk")
        calls = editor.of_kind("tool_call")
        expect([c.kind for c in calls] == ["edit", "execute"], f"calls {calls}")
        expect(any(str(loc.path) == calc for loc in calls[0].locations), "no location")
        finished = [
            u for u in editor.of_kind("tool_call_update") if u.status == "completed"
        ]
        diffs = [c for u in finished for c in (u.content or []) if c.type == "diff"]
        expect(len(diffs) == 1, f"diffs {diffs}")
        expect(str(diffs[0].path) == calc, f"diff path {diffs[0].path}")
        expect("a - b" in diffs[0].old_text and "a + b" in diffs[0].new_text, "diff text")
        expect(
            len(editor.permissions) == 1 and "rm -rf build" in editor.permissions[0],
            f"permissions {editor.permissions}",
        )
        expect(
            not (workspace / "build" / "out.o").exists(),
            f"the allowed command did not run: {editor.of_kind('tool_call_update')}",
        )
        text = "".join(
            u.content.text for u in editor.of_kind("agent_message_chunk")
        )
        expect("Done." in text, f"answer {text!r}")
        # The slash commands the session offers.
        offered = editor.of_kind("available_commands_update")
        names = [c.name for c in offered[0].available_commands] if offered else []
        expect(names == ["implement", "fix", "explain", "tests", "compact"], f"commands {offered}")
        # How full the context is after the first model call (900 in, 20 out).
        usage = editor.of_kind("usage_update")
        expect(usage and usage[0].used == 920 and usage[0].size > 920, f"usage {usage}")

        # 2. The user typed in the buffer and did not save: the edit is planned on
        # the buffer and lands in it, the typing kept.
        unsaved = Path(calc).read_text() + "# the user's unsaved line\n"
        editor.buffers[calc] = unsaved
        # In util.py the user types while the edit is in flight: after the agent's
        # read, before its write (the second read is the check before writing).
        util = str(workspace / "util.py")
        util_saved = Path(util).read_text()
        typed = "# typed while the agent edited\n"
        editor.buffers[util] = util_saved
        editor.type_on_read[util] = (2, typed)
        editor.updates.clear()
        done = await conn.prompt(session_id=sid, prompt=[text_block("Rename add")])
        expect(done.stop_reason == "end_turn", f"stop reason {done.stop_reason}")
        expect(editor.writes == [calc, calc], f"writes {editor.writes}")
        expect(
            editor.buffers[calc] == unsaved.replace("def add", "def plus"),
            f"the edit did not land on the buffer: {editor.buffers[calc]!r}",
        )
        expect(
            editor.buffers[util] == util_saved + typed,
            f"the typing in util.py was not kept: {editor.buffers[util]!r}",
        )
        expect(Path(util).read_text() == util_saved, "util.py changed on disk")
        failed = [u for u in editor.of_kind("tool_call_update") if u.status == "failed"]
        expect(len(failed) == 1, f"failed calls {failed}")
        said = " ".join(
            c.content.text for c in failed[0].content or [] if c.type == "content"
        )
        expect("nothing was changed" in said, f"failure text {said!r}")

        # 3. Ask before edits: the permission shows the diff; we refuse it.
        await conn.set_session_mode(session_id=sid, mode_id="ask_before_edits")
        # The user saved: the buffer is the disk again, so only the refusal stops it.
        saved = editor.buffers.pop(calc)
        Path(calc).write_text(saved)
        editor.buffers.pop(util)
        editor.updates.clear()
        done = await conn.prompt(session_id=sid, prompt=[text_block("Double it")])
        expect(done.stop_reason == "end_turn", f"stop reason {done.stop_reason}")
        asked = editor.permission_calls[-1]
        expect(asked.title.startswith("Edit ") and calc in asked.title, f"asked {asked.title}")
        asked_diffs = [c for c in asked.content or [] if c.type == "diff"]
        expect(len(asked_diffs) == 1 and "a * 2" in asked_diffs[0].new_text, f"asked {asked}")
        expect(editor.writes == [calc, calc], f"a refused edit was written: {editor.writes}")
        expect(Path(calc).read_text() == saved, "the file changed")
        failed = [u for u in editor.of_kind("tool_call_update") if u.status == "failed"]
        expect(len(failed) == 1, f"failed calls {failed}")
        said = " ".join(
            c.content.text for c in failed[0].content or [] if c.type == "content"
        )
        expect("did not allow" in said, f"failure text {said!r}")

        # 4. Read-only: a write is refused and nothing lands.
        await conn.set_session_mode(session_id=sid, mode_id="read_only")
        editor.updates.clear()
        done = await conn.prompt(session_id=sid, prompt=[text_block("/explain calc.py")])
        expect(done.stop_reason == "end_turn", f"stop reason {done.stop_reason}")
        expect(not (workspace / "notes.txt").exists(), "read-only mode wrote a file")
        failed = [u for u in editor.of_kind("tool_call_update") if u.status == "failed"]
        expect(len(failed) == 1, f"failed calls {failed}")

        # 5. A command the policy asks about, which we run in our own terminal.
        await conn.set_session_mode(session_id=sid, mode_id="edit")
        editor.updates.clear()
        done = await conn.prompt(session_id=sid, prompt=[text_block("Clean stale")])
        expect(done.stop_reason == "end_turn", f"stop reason {done.stop_reason}")
        expect(
            editor.permission_options[0] == ["allow", "terminal", "reject"],
            f"options {editor.permission_options}",
        )
        lines = [line for line, _ in editor.terminals.values()]
        expect(len(lines) == 1 and "rm -rf stale" in lines[0], f"terminals {lines}")
        expect(not (workspace / "stale").exists(), "the terminal did not run the command")
        finished = [u for u in editor.of_kind("tool_call_update") if u.status == "completed"]
        said = " ".join(
            c.content.text for u in finished for c in u.content or [] if c.type == "content"
        )
        expect(
            "cleaned-in-terminal" in said and "(user's terminal)" in said,
            f"the command's result {said!r}",
        )
        editor.updates.clear()

        # 6. Cancel a long command as soon as it starts, on the other model.
        picked = await conn.set_config_option(config_id="model", session_id=sid, value="other")
        picked = [o.model_dump(by_alias=True, exclude_none=True) for o in picked.config_options]
        expect(picked[0]["currentValue"] == "other", f"picked {picked}")

        async def cancel_on_start(update):
            if update.session_update == "tool_call" and update.kind == "execute":
                await conn.cancel(session_id=sid)

        editor.on_update = cancel_on_start
        loop = asyncio.get_running_loop()
        started = loop.time()
        done = await asyncio.wait_for(
            conn.prompt(session_id=sid, prompt=[text_block("Wait a while")]), 20
        )
        took = loop.time() - started
        expect(done.stop_reason == "cancelled", f"stop reason {done.stop_reason}")
        expect(took < 15, f"cancel took {took:.1f} s")

    # 7. Another agent process loads the session and goes on from it.
    editor.on_update = None
    editor.updates.clear()
    async with spawn() as (conn, _proc):
        await initialize(conn)
        await conn.load_session(session_id=sid, cwd=str(workspace), mcp_servers=[])
        users = "".join(u.content.text for u in editor.of_kind("user_message_chunk"))
        agents = "".join(u.content.text for u in editor.of_kind("agent_message_chunk"))
        expect("Fix add in calc.py" in users and "Wait a while" in users, f"user {users!r}")
        expect("Done." in agents, f"agent {agents!r}")
        replayed = [c.tool_call_id for c in editor.of_kind("tool_call")]
        expect(replayed[:3] == ["c1", "c2", "c3a"], f"replayed calls {replayed}")
        editor.updates.clear()
        done = await conn.prompt(session_id=sid, prompt=[text_block("Still there?")])
        expect(done.stop_reason == "end_turn", f"stop reason {done.stop_reason}")
        text = "".join(u.content.text for u in editor.of_kind("agent_message_chunk"))
        expect("I remember." in text, f"answer {text!r}")
    print(f"ok: 6 prompts, cancel answered in {took:.2f} s, session loaded and continued")


asyncio.run(main())
