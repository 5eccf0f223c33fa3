#!/usr/bin/env python3
"""A small MCP server over stdio for lwirc's run tests, in plain JSON-RPC (no SDK, so the
tests need nothing installed beyond python3). Every `tools/call` it receives is appended
to the log file, one line `NAME KEY` (KEY the `_meta` `lwir/idempotency-key`, `-` when
absent): the tests count calls at the server.

Options (argv):
  --log FILE        where calls are counted (default: none)
  --variant N       the version of the `add` tool's input schema (1: {a, b}; 2: adds a
                    required `c`): the tests change it between registration and a run
  --delay-ms N      `double` answers after N milliseconds (calls are handled one at a time)
  --fixed FILE      `flaky` succeeds once FILE exists
  --change-after N  at its Nth call, before answering it, `add` changes to variant 2 and
                    the server sends `notifications/tools/list_changed`
  --crash-once FILE `crash` exits mid-call only while FILE does not exist, and makes it
                    first (so a server started again survives it: `crash` answers `survived`)

Tools:
  add {a, b}        structured {"sum": a + b}; its outputSchema uses $ref/$defs
  double {x}        structured {"v": 2 * x}
  echo {message}    text `Echo: <message>`
  huge              a 100 MB text result
  escapes           text full of terminal escape sequences
  hang              never answers (other requests are answered)
  crash             exits with status 3 in the middle of the call (see --crash-once)
  garbage           answers with half a JSON line, then a line that is not JSON
  flaky             fails (isError) unless the file named by --fixed exists
  env               structured: the environment it runs with
"""

import json
import os
import sys
import time

args = sys.argv[1:]
out = sys.stdout.buffer


def option(name, default=None):
    if name in args:
        return args[args.index(name) + 1]
    return default


LOG = option("--log")
VARIANT = int(option("--variant", "1"))
DELAY = int(option("--delay-ms", "0")) / 1000


def send(message):
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


def answer(id, result):
    send({"jsonrpc": "2.0", "id": id, "result": result})


def text(t, is_error=False):
    result = {"content": [{"type": "text", "text": t}]}
    if is_error:
        result["isError"] = True
    return result


def structured(value):
    return {"content": [{"type": "text", "text": json.dumps(value)}], "structuredContent": value}


add_input = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "title": "AddArguments",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "default": 0}},
    "required": ["a", "b"],
}


def to_variant_2():
    add_input["properties"]["c"] = {"type": "integer"}
    add_input["required"] = ["a", "b", "c"]


if VARIANT >= 2:
    to_variant_2()
CHANGE_AFTER = int(option("--change-after", "0"))
CRASH_ONCE = option("--crash-once")
calls_seen = 0

TOOLS = [
    {"name": "add", "description": "Adds two integers", "inputSchema": add_input,
     "outputSchema": {"type": "object", "$defs": {"n": {"type": "integer", "title": "N"}},
                      "properties": {"sum": {"$ref": "#/$defs/n"}}, "required": ["sum"]}},
    {"name": "double", "description": "Doubles an integer",
     "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
     "outputSchema": {"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"]}},
    {"name": "echo", "description": "Echoes a message",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}},
] + [
    {"name": n, "description": f"the {n} tool", "inputSchema": {"type": "object"}}
    for n in ["huge", "escapes", "hang", "crash", "garbage", "flaky", "env"]
]


def count(name, meta):
    if LOG:
        key = (meta or {}).get("lwir/idempotency-key", "-")
        with open(LOG, "a") as f:
            f.write(f"{name} {key}\n")


def call(id, params):
    global calls_seen
    name = params.get("name")
    arguments = params.get("arguments") or {}
    count(name, params.get("_meta"))
    calls_seen += 1
    if calls_seen == CHANGE_AFTER:
        to_variant_2()
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    if name == "add":
        answer(id, structured({"sum": arguments.get("a", 0) + arguments.get("b", 0) + arguments.get("c", 0)}))
    elif name == "double":
        time.sleep(DELAY)
        answer(id, structured({"v": 2 * arguments.get("x", 0)}))
    elif name == "echo":
        answer(id, text("Echo: " + str(arguments.get("message"))))
    elif name == "huge":
        head = json.dumps({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": ""}]}})
        cut = head.index('"text": "') + len('"text": "')
        out.write(head[:cut].encode())
        chunk = b"y" * (1 << 20)
        for _ in range(100):
            out.write(chunk)
        out.write(head[cut:].encode() + b"\n")
        out.flush()
    elif name == "escapes":
        answer(id, text("\x1b]0;owned\x07\x1b[2J\x1b[31mred\x1b[0m \u202e evil \x9b31m"))
    elif name == "hang":
        pass
    elif name == "crash" and CRASH_ONCE and os.path.exists(CRASH_ONCE):
        answer(id, text("survived"))
    elif name == "crash":
        if CRASH_ONCE:
            open(CRASH_ONCE, "w").close()
        sys.stderr.write("counter: crashing mid-call\n")
        sys.stderr.flush()
        os._exit(3)
    elif name == "garbage":
        out.write(b'{"jsonrpc": "2.0", "id": \n<html>oops</html>\n')
        out.flush()
    elif name == "flaky":
        fixed = option("--fixed")
        if fixed and os.path.exists(fixed):
            answer(id, structured({"ok": True}))
        else:
            answer(id, text("not yet \x1b[31mfixed\x1b[0m", is_error=True))
    elif name == "env":
        answer(id, structured(dict(os.environ)))
    else:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": f"Unknown tool: {name}"}})


for line in sys.stdin.buffer:
    if not line.strip():
        continue
    try:
        message = json.loads(line)
    except ValueError:
        continue
    method = message.get("method")
    id = message.get("id")
    params = message.get("params") or {}
    if method == "initialize":
        answer(id, {"protocolVersion": params.get("protocolVersion"),
                    "capabilities": {"tools": {"listChanged": True}},
                    "serverInfo": {"name": "counter", "version": "1.0"}})
    elif method == "ping":
        answer(id, {})
    elif method == "tools/list":
        answer(id, {"tools": TOOLS})
    elif method == "tools/call":
        call(id, params)
    elif id is not None:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
