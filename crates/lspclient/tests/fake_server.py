# A tiny language server for the tests: one diagnostic per line holding BAD; on a text
# holding HANG it publishes nothing; on CRASH it exits.
# --pull: offers pull diagnostics (textDocument/diagnostic) and never publishes, as a
#   server that skips publishes when nothing changed would look to a push-only client.
# --unhealthy: reports its health as `error` (a workspace that failed to load) before
#   answering initialize.
# --loading-ms N: plays rust-analyzer loading the workspace: names itself so, says it
#   is loading (serverStatus) only 200 ms after initialize, quiescent after N ms.
import json
import sys
import threading

PULL = "--pull" in sys.argv
UNHEALTHY = "--unhealthy" in sys.argv
LOADING_MS = int(sys.argv[sys.argv.index("--loading-ms") + 1]) if "--loading-ms" in sys.argv else 0
texts = {}
lock = threading.Lock()

inp = sys.stdin.buffer
out = sys.stdout.buffer


def send(msg):
    body = json.dumps(msg).encode()
    with lock:
        out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        out.flush()


def status(quiescent):
    send({"jsonrpc": "2.0", "method": "experimental/serverStatus",
          "params": {"health": "ok", "quiescent": quiescent}})


def diagnostics(text):
    diags = [
        {"range": {"start": {"line": i, "character": 0},
                   "end": {"line": i, "character": 3}},
         "severity": 1, "source": "fake", "message": "bad line"}
        for i, l in enumerate(text.split("\n")) if "BAD" in l
    ]
    diags.append({"range": {"start": {"line": 0, "character": 0},
                            "end": {"line": 0, "character": 0}},
                  "severity": 2, "message": "a warning"})
    return diags


while True:
    length = None
    while True:
        line = inp.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    msg = json.loads(inp.read(length))
    method = msg.get("method")
    if method == "initialize":
        caps = {"diagnosticProvider": {"interFileDependencies": False,
                                       "workspaceDiagnostics": False}} if PULL else {}
        if UNHEALTHY:
            send({"jsonrpc": "2.0", "method": "experimental/serverStatus",
                  "params": {"health": "error", "quiescent": True,
                             "message": "Failed to load workspaces."}})
        result = {"capabilities": caps}
        if LOADING_MS:
            # Plays rust-analyzer, whose first status may come after the client's first
            # check: the client must take it as loading from the start.
            result["serverInfo"] = {"name": "rust-analyzer"}
        send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
        if LOADING_MS:
            threading.Timer(0.2, status, [False]).start()
            threading.Timer(LOADING_MS / 1000, status, [True]).start()
        # A server request the client must answer without blocking anything.
        send({"jsonrpc": "2.0", "id": "c1", "method": "workspace/configuration",
              "params": {"items": [{}]}})
    elif method in ("textDocument/didOpen", "textDocument/didChange"):
        doc = msg["params"]["textDocument"]
        text = (msg["params"].get("contentChanges") or [doc])[-1]["text"]
        if "CRASH" in text:
            sys.exit(3)
        texts[doc["uri"]] = text
        if "HANG" in text or PULL:
            continue
        send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
              "params": {"uri": doc["uri"], "version": doc["version"],
                         "diagnostics": diagnostics(text)}})
    elif method == "textDocument/diagnostic":
        text = texts.get(msg["params"]["textDocument"]["uri"], "")
        if "HANG" in text:
            continue
        send({"jsonrpc": "2.0", "id": msg["id"],
              "result": {"kind": "full", "items": diagnostics(text)}})
