# A tiny language server for the tests: one diagnostic per line holding BAD; on a text
# holding HANG it publishes nothing; on CRASH it exits.
import json
import sys

inp = sys.stdin.buffer
out = sys.stdout.buffer


def send(msg):
    body = json.dumps(msg).encode()
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    out.flush()


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
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": {}}})
        # A server request the client must answer without blocking anything.
        send({"jsonrpc": "2.0", "id": "c1", "method": "workspace/configuration",
              "params": {"items": [{}]}})
    elif method in ("textDocument/didOpen", "textDocument/didChange"):
        doc = msg["params"]["textDocument"]
        text = (msg["params"].get("contentChanges") or [doc])[-1]["text"]
        if "CRASH" in text:
            sys.exit(3)
        if "HANG" in text:
            continue
        diags = [
            {"range": {"start": {"line": i, "character": 0},
                       "end": {"line": i, "character": 3}},
             "severity": 1, "source": "fake", "message": "bad line"}
            for i, l in enumerate(text.split("\n")) if "BAD" in l
        ]
        diags.append({"range": {"start": {"line": 0, "character": 0},
                                "end": {"line": 0, "character": 0}},
                      "severity": 2, "message": "a warning"})
        send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
              "params": {"uri": doc["uri"], "version": doc["version"],
                         "diagnostics": diags}})
