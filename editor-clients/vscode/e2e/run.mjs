// The VS Code end-to-end scenario: code-server with the packaged extension, driven by
// Chromium through playwright-core. Started by the Rust test tests/vscode/main.rs, which
// owns the fixture model server: `ctl()` asks it (stdout `@@ctl {...}`, answer on stdin).
//
// Env: AGENTLS_BIN, AGENTLS_CONFIG, E2E_WORKSPACE, E2E_HOME (scratch), E2E_OUT
// (screenshots). Prints `PASS <step>` per step and `FIGURE <name> <value>` per measure.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const ext = join(dirname(fileURLToPath(import.meta.url)), "..");
const codeServer = join(ext, ".e2e/code-server/node_modules/.bin/code-server");
const { AGENTLS_BIN, E2E_WORKSPACE: ws, E2E_HOME: home, E2E_OUT: out } = process.env;
const answers = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

async function ctl(msg) {
  process.stdout.write(`@@ctl ${JSON.stringify(msg)}\n`);
  const { value } = await answers.next();
  return JSON.parse(value);
}
const push = (...turns) => ctl({ push: turns });
// Turns of the completion model (a fixture server of its own).
const pushCompletion = (...turns) => ctl({ push_completion: turns });
const text = (t, extra = {}) => ({ events: [{ text: t }], ...extra });
const call = (id, name, args) => ({ tool_call: { id, name, arguments: args } });
const log = (...a) => console.log(...a);
const figure = (name, value, unit) => log(`FIGURE ${name} ${value} ${unit}`);

async function freePort() {
  return new Promise((res) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

async function until(what, fn, ms = 20000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ""}`);
}

const userData = join(home, "user");
const extDir = join(home, "extensions");
mkdirSync(join(userData, "User"), { recursive: true });
mkdirSync(out, { recursive: true });
writeFileSync(
  join(userData, "User/settings.json"),
  JSON.stringify({
    "agentls.path": AGENTLS_BIN,
    "agentls.review": "review",
    "agentls.log": "debug",
    "workbench.startupEditor": "none",
    "security.workspace.trust.enabled": false,
    "workbench.tips.enabled": false,
    "extensions.autoCheckUpdates": false,
    "extensions.autoUpdate": false,
    "telemetry.telemetryLevel": "off",
    "editor.codeLens": true,
    "editor.lightbulb.enabled": "on",
    "window.commandCenter": false,
    // The ghost text step: VS Code's own word suggestions would take its Tab.
    "editor.quickSuggestions": { other: "off", comments: "off", strings: "off" },
  }),
);
const install = spawnSync(codeServer, ["--extensions-dir", extDir, "--user-data-dir", userData, "--install-extension", join(ext, "dist/agentls.vsix")], { encoding: "utf8", env: { ...process.env, XDG_CONFIG_HOME: join(home, "config") } });
if (install.status !== 0) throw new Error(`installing the .vsix failed: ${install.stdout}${install.stderr}`);
log("extension installed from dist/agentls.vsix");

const port = await freePort();
const server = spawn(
  codeServer,
  ["--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--user-data-dir", userData, "--extensions-dir", extDir, "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override", ws],
  // Its own config dir: code-server writes a config.yaml there on first run.
  { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, XDG_CONFIG_HOME: join(home, "config") } },
);
let serverLog = "";
server.stdout.on("data", (d) => (serverLog += d));
server.stderr.on("data", (d) => (serverLog += d));
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-gpu"],
});
let page;
let exitCode = 0;
try {
  await until("code-server", async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 30000);
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  // Playwright's 30 s default is short for two loaded cores (CI runs this on two).
  page.setDefaultTimeout(60000);
  const t0 = Date.now();
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`);
  await page.locator(".monaco-workbench").waitFor({ timeout: 60000 });
  await page.locator(".statusbar").getByText(/idle/).waitFor({ timeout: 60000 });
  figure("workbench_and_server_ready", Date.now() - t0, "ms");

  const palette = async (command) => {
    await page.keyboard.press("Control+Shift+P");
    const input = page.locator(".quick-input-widget input");
    await input.waitFor();
    await input.fill(`>${command}`);
    await page.locator(".quick-input-list .monaco-list-row").first().getByText(command, { exact: false }).waitFor();
    await page.keyboard.press("Enter");
  };
  const chatFrame = async () =>
    until("the chat panel", async () => {
      for (const f of page.frames()) if (await f.locator("#turns").count().catch(() => 0)) return f;
      return undefined;
    });

  // Open the file first, so the lightbulb step has it.
  await palette("Go to File");
  // Type only once the palette has turned into the file picker: keys typed before that
  // are reset with the palette's `>` text.
  const picker = page.locator(".quick-input-widget input");
  await until("the file picker", async () => !(await picker.inputValue()).startsWith(">"));
  await picker.fill("lib.rs");
  // Enter only once the file is in the list, not after a guessed delay.
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "lib.rs" }).first().waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".monaco-editor .view-lines").getByText("pub fn double").waitFor();

  // The panel.
  const tOpen = Date.now();
  await palette("Agent: Focus on Chat View");
  const chat = await chatFrame();
  const shown = Date.now() - tOpen;
  const ready = Number(await until("panel metrics", () => chat.evaluate(() => document.body.dataset.panelReadyMs)));
  figure("panel_ready_after_resolve", ready, "ms (budget 300)");
  figure("panel_visible_after_command", shown, "ms (including the palette)");
  await until("models in the picker", async () => (await chat.locator("#model option").count()) >= 2);
  log("PASS panel");

  // A prompt: a tool card, then a streamed answer at 200 tokens/s (5 ms per ~4-char token).
  const words = Array.from({ length: 200 }, (_, i) => `w${i % 10}x`).join("");
  await push(
    { events: [{ text: "I'll read the file." }, call("c1", "read_file", { path: "src/lib.rs" })], usage: { input: 1200, cached_input: 1024, output: 20 } },
    { events: [{ text: "`add` subtracts. " + words + " END" }], chunk_chars: 4, frame_delay_ms: 5, usage: { input: 1400, cached_input: 1200, output: 210 } },
  );
  await chat.locator("#input").fill("What does add do? @file");
  const tSend = Date.now();
  await chat.locator("#send").click();
  await chat.locator('details.tool[data-tool="read_file"]').waitFor();
  await chat.locator(".answer", { hasText: "END" }).waitFor();
  const streamMs = Date.now() - tSend;
  await until("the run to finish", async () => (await chat.evaluate(() => document.body.dataset.running)) === "false");
  const m = await chat.evaluate(() => ({ ...document.body.dataset }));
  figure("first_token_shown_after_arrival", m.firstTokenMs, "ms (budget 50)");
  figure("stream_deltas", m.deltas, "text deltas");
  figure("stream_frames", m.frames, "renders (batched per animation frame)");
  figure("stream_delta_to_render_p50_p95_max", m.lagMs, "ms (how long the oldest unrendered delta waited, per render)");
  figure("prompt_to_answer_end", streamMs, "ms (200 tokens at 200 tokens/s)");
  const usage = await chat.locator(".turn .usage").last().textContent();
  if (!/2600 in/.test(usage)) throw new Error(`usage per turn missing: ${usage}`);
  await page.screenshot({ path: join(out, "chat-panel.png") });
  log("PASS prompt");

  // Review: two edits land pending; accept one, reject the other.
  await push(
    { events: [call("e1", "str_replace", { path: "src/lib.rs", old_string: "    a - b", new_string: "    a + b" })] },
    { events: [call("e2", "str_replace", { path: "src/lib.rs", old_string: "    2\n", new_string: "    1\n" })] },
    text("Fixed both."),
  );
  await chat.locator("#input").fill("fix add and one");
  await chat.locator("#send").click();
  await chat.locator(".answer", { hasText: "Fixed both." }).waitFor();
  const editor = page.locator(".monaco-editor .view-lines").first();
  await editor.getByText("a + b").waitFor();
  const lenses = page.locator(".codelens-decoration a");
  await until("two changes to review", async () => (await lenses.filter({ hasText: "Reject change" }).count()) === 2);
  await page.locator(".codelens-decoration a", { hasText: "Diff" }).click();
  await page.locator(".monaco-diff-editor").waitFor();
  await page.screenshot({ path: join(out, "review-diff.png") });
  await page.keyboard.press("Control+W");
  await page.locator(".monaco-editor .view-lines").first().getByText("a + b").waitFor();
  await lenses.filter({ hasText: "Accept change" }).first().click();
  await until("one change left", async () => (await lenses.filter({ hasText: "Reject change" }).count()) === 1);
  await page.screenshot({ path: join(out, "review-lenses.png") });
  await lenses.filter({ hasText: "Reject change" }).first().click();
  await until("no change left", async () => (await lenses.filter({ hasText: "Reject change" }).count()) === 0);
  const lines = await page.locator(".monaco-editor .view-lines").first().innerText();
  const rows = lines.split("\n").map((l) => l.replace(/\u00a0/g, " ").trim());
  if (!rows.includes("a + b") || !rows.includes("2") || rows.includes("1")) throw new Error(`review result wrong:\n${lines}`);
  log("PASS review");

  // Cancel a slow run.
  await push({ events: [{ text: "Thinking" }, { delay_ms: 20000 }, { text: " too late" }] });
  await chat.locator("#input").fill("take your time");
  await chat.locator("#send").click();
  await chat.locator(".answer", { hasText: "Thinking" }).waitFor();
  await chat.locator("#cancel").click();
  await chat.locator(".turn .usage", { hasText: "cancelled" }).waitFor();
  log("PASS cancel");

  // Switch models mid-chat: the next run goes to the other model.
  await chat.locator("#model").selectOption("strong");
  await until("the session on strong", async () => (await chat.locator("#model").inputValue()) === "strong");
  await push(text("Strong here."));
  await chat.locator("#input").fill("who are you?");
  await chat.locator("#send").click();
  await chat.locator(".answer", { hasText: "Strong here." }).waitFor();
  const { models } = await ctl({ requests: true });
  if (models[models.length - 1] !== "fixture-strong" || models[0] !== "fixture-fast") throw new Error(`models asked: ${models}`);
  log("PASS model switch");

  // New session clears the panel; Sessions resumes the first one from its transcript.
  await chat.locator("#new").click();
  await until("an empty panel", async () => (await chat.locator(".turn").count()) === 0);
  await chat.locator("#resume").click();
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "What does add do?" }).waitFor();
  await page.keyboard.type("What does add");
  await page.keyboard.press("Enter");
  await chat.locator(".answer", { hasText: "Strong here." }).waitFor();
  await chat.locator(".prompt", { hasText: "take your time" }).waitFor();
  log("PASS resume");

  // An approval: the command policy asks about pushing (window/showMessageRequest); the panel's Deny answers.
  await push({ events: [call("r1", "run_command", { command: "git push origin main" })] }, text("Not deployed."));
  await chat.locator("#input").fill("deploy it");
  await chat.locator("#send").click();
  const deny = chat.locator("button.approve", { hasText: "Deny" });
  await deny.waitFor();
  await page.screenshot({ path: join(out, "approval.png") });
  await deny.click();
  await chat.locator(".approval", { hasText: "denied" }).waitFor();
  await chat.locator(".answer", { hasText: "Not deployed." }).waitFor();
  log("PASS approval");

  // The lightbulb: select `double`'s body, run "Agent: implement this".
  await push(
    { events: [call("i1", "str_replace", { path: "src/lib.rs", old_string: "    x\n}", new_string: "    x * 2\n}" })] },
    // Long enough for the progress notification to be seen on a loaded machine.
    { events: [{ delay_ms: 5000 }, { text: "Implemented." }] },
  );
  await page.locator(".monaco-editor .view-lines").first().getByText("pub fn double").click();
  await page.keyboard.press("Home");
  await page.keyboard.press("Shift+ArrowDown");
  await page.keyboard.press("Shift+ArrowDown");
  await page.keyboard.press("Shift+End");
  await page.keyboard.press("Control+.");
  const action = page.locator(".action-widget .monaco-list-row", { hasText: "Agent: implement this" });
  await action.waitFor();
  await page.screenshot({ path: join(out, "lightbulb.png") });
  // The menu's pointer block swallows clicks: choose with the keyboard.
  // One key per check, and a pause for the focus to move: a loaded machine renders the
  // move late, and pressing on would run past the action.
  await until("the action focused", async () => {
    const focused = await page.locator(".action-widget .monaco-list-row.focused").getAttribute("aria-label");
    if (focused === "Agent: implement this") return true;
    await page.keyboard.press("ArrowDown");
    await new Promise((r) => setTimeout(r, 300));
    return false;
  }, 15000);
  await page.keyboard.press("Enter");
  // The run's progress: a notification with a Cancel button.
  const note = page
    .locator(".notifications-toasts .notification-toast", { hasText: /agentls: .*implement/i })
    .filter({ has: page.getByRole("button", { name: "Cancel" }) });
  await note.first().waitFor();
  await page.screenshot({ path: join(out, "progress-notification.png") });
  await page.locator(".monaco-editor .view-lines").first().getByText("x * 2").waitFor();
  log("PASS lightbulb");

  // Semantic search from the palette: hits as you type, Enter opens the chosen one.
  await palette("Agent: Search Code by Meaning");
  await page.locator(".quick-input-widget input").waitFor();
  const tSearch = Date.now();
  await page.keyboard.type("where do we retry uploads that failed");
  const hitRow = page.locator(".quick-input-list .monaco-list-row", { hasText: "retry_failed_upload (function)" });
  await hitRow.waitFor();
  figure("search_typed_to_hits", Date.now() - tSearch, "ms (typing included)");
  const searchTitle = await page.locator(".quick-input-title").innerText();
  if (!/ranked by words/.test(searchTitle)) throw new Error(`search title: ${searchTitle}`);
  if (!(await hitRow.innerText()).includes("src/upload.rs:1")) throw new Error(`search row: ${await hitRow.innerText()}`);
  await page.screenshot({ path: join(out, "semantic-search.png") });
  await page.keyboard.press("Enter");
  await page.locator(".tab.active", { hasText: "upload.rs" }).waitFor();
  await page.locator(".monaco-editor .view-lines", { hasText: "pub fn retry_failed_upload" }).first().waitFor();
  log("PASS search");

  // Ghost text: typed code gets the server's completion after the cursor (its first line
  // inline, the rest in lines below); Tab inserts it; saved, the file has it. Every
  // completion the server asks the model for takes a turn: enough of the same one.
  const ghost = "(a: i32, b: i32) -> i32 {\n    a * b\n}";
  await pushCompletion(...Array.from({ length: 8 }, () => text(ghost)));
  await palette("Go to File");
  await until("the file picker", async () => !(await picker.inputValue()).startsWith(">"));
  await picker.fill("complete.rs");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "complete.rs" }).first().waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".tab.active", { hasText: "complete.rs" }).waitFor();
  const completeEditor = page.locator(".monaco-editor", { hasText: "Ghost text lands here" }).first();
  await completeEditor.locator(".view-lines").getByText("Ghost text lands here").click();
  await page.keyboard.press("Control+End");
  const tType = Date.now();
  await page.keyboard.type("pub fn mul");
  // The first line: an inline decoration (in pieces when VS Code colours it).
  const inline = async () => (await completeEditor.locator(".ghost-text-decoration").allTextContents()).join("").replace(/\u00a0/g, " ");
  await until("the ghost text", async () => (await inline()) === "(a: i32, b: i32) -> i32 {", 30000);
  figure("ghost_text_after_typing", Date.now() - tType, "ms (10 keys typed, the server's debounce and the fixture model included)");
  // The lines after the first: lines of VS Code's view zone under the cursor's line,
  // each in coloured pieces.
  const belowLines = completeEditor.locator(".view-line", { has: page.locator(".ghost-text") });
  const below = (await belowLines.allInnerTexts()).map((l) => l.replace(/\u00a0/g, " ")).join("\n");
  if (below !== "    a * b\n}") throw new Error(`ghost text lines below: ${JSON.stringify(below)}`);
  await page.screenshot({ path: join(out, "ghost-text.png") });
  await page.keyboard.press("Tab");
  await page.keyboard.press("Control+S");
  // The file on disk is the buffer's text (the editor's DOM also holds ghost text).
  const onDisk = () => readFileSync(join(ws, "src/complete.rs"), "utf8");
  const expected = "// Ghost text lands here.\npub fn mul(a: i32, b: i32) -> i32 {\n    a * b\n}";
  await until("the completion saved", async () => onDisk().includes("a * b"));
  if (onDisk() !== expected) throw new Error(`saved file: ${JSON.stringify(onDisk())}`);
  log("PASS ghost text");

  // Word by word: Ctrl+Right (editor.action.inlineSuggest.acceptNextWord) takes the
  // ghost text's next word only, and the rest still shows.
  await page.keyboard.press("Enter");
  await page.keyboard.type("pub fn sub");
  await until("the ghost text again", async () => (await inline()) === "(a: i32, b: i32) -> i32 {", 30000);
  await page.keyboard.press("Control+ArrowRight");
  await until("the rest still ghost text", async () => {
    const rest = await inline();
    return rest !== "" && rest !== "(a: i32, b: i32) -> i32 {";
  });
  await page.keyboard.press("Control+S");
  const full = "pub fn sub(a: i32, b: i32) -> i32 {";
  const lastLine = () => onDisk().split("\n").pop() ?? "";
  await until("the word saved", async () => lastLine().startsWith("pub fn sub") && lastLine() !== "pub fn sub");
  const taken = lastLine();
  if (!full.startsWith(taken) || taken.length >= full.length) throw new Error(`after Ctrl+Right: ${JSON.stringify(taken)}`);
  log(`ctrl+right took: ${JSON.stringify(taken)}, left as ghost text: ${JSON.stringify(await inline())}`);
  log("PASS ghost text word");

  // Next edits: `count` renamed to `total` where it is assigned; the uses below show
  // struck through (the new name after each), Tab jumps to the first, Tab applies them
  // all; saved, the file has every use renamed. Ghost text would take the Tab (it is
  // the completion at the cursor, and wins, as in Copilot): the completion model has
  // nothing more to say in this step.
  await ctl({ clear_completion: true });
  await palette("Go to File");
  await until("the file picker", async () => !(await picker.inputValue()).startsWith(">"));
  await picker.fill("rename.rs");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "rename.rs" }).first().waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".tab.active", { hasText: "rename.rs" }).waitFor();
  const renameEditor = page.locator(".monaco-editor", { hasText: "let count = 1;" }).first();
  await renameEditor.locator(".view-lines").getByText("fn main").click();
  // Line 2, column 9: on `count`; Ctrl+D selects the word.
  await page.keyboard.press("Control+G");
  await page.keyboard.type("2:9");
  await page.keyboard.press("Enter");
  await page.keyboard.press("Control+D");
  const tRename = Date.now();
  await page.keyboard.type("total");
  const struck = async () =>
    page.evaluate(() =>
      [...document.querySelectorAll(".monaco-editor .view-line span")]
        .filter((s) => s.children.length === 0 && document.defaultView.getComputedStyle(s).textDecorationLine.includes("line-through"))
        .map((s) => s.textContent)
        .join("|"),
    );
  await until("the next edits", async () => (await struck()) === "count|count", 30000);
  figure("next_edits_after_typing", Date.now() - tRename, "ms (5 keys typed, the extension's 150 ms and the server's 300 ms typing wait included)");
  await page.screenshot({ path: join(out, "next-edit.png") });
  if ((await renameEditor.locator(".ghost-text-decoration").count()) > 0) throw new Error("ghost text shows: it would take the Tab");
  await page.keyboard.press("Tab");
  await page.keyboard.press("Tab");
  await until("the next edits applied", async () => (await struck()) === "", 10000);
  await page.keyboard.press("Control+S");
  const renamed = "fn main() {\n    let total = 1;\n    let double = total * 2;\n    let _ = total + double;\n}\n";
  const renameOnDisk = () => readFileSync(join(ws, "src/rename.rs"), "utf8");
  await until("the renamed file saved", async () => renameOnDisk() === renamed, 10000).catch(() => {
    throw new Error(`saved rename.rs: ${JSON.stringify(renameOnDisk())}`);
  });
  log("PASS next edit");
  const status = await page.locator(".statusbar").innerText();
  log(`status bar: ${status.replace(/\s+/g, " ").slice(0, 200)}`);
} catch (e) {
  exitCode = 1;
  console.error(`FAIL: ${e.stack ?? e}`);
  if (page) await page.screenshot({ path: join(out, "failure.png") }).catch(() => {});
  console.error(`code-server log (tail):\n${serverLog.slice(-3000)}`);
} finally {
  await browser.close().catch(() => {});
  server.kill();
}
process.exit(exitCode);
