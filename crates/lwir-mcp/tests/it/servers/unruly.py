#!/usr/bin/env python3
"""A small MCP server over stdio, in plain JSON-RPC (no SDK), that shows what the real
servers cannot: it echoes the `_meta` it received, and it misbehaves on request.

Options (argv):
  --exit N          exit with status N at once, before reading anything
  --banner          print a line that is not JSON on stdout at start
  --silent          never answer `initialize`
  --list-changed    after `initialized`, add the tool `late` and say so
  --pages N         list the tools over N pages
  --cursor-loop     every page of `tools/list` points to the same next page
  --bool-schema     list a tool whose inputSchema is `true` (MCP wants an object)

Tools:
  meta              structured: {"meta": <_meta received>, "arguments": <arguments>}
  echo {message}    text `Echo: <message>`
  fail              isError with a message holding terminal escapes
  big {size}        text of `size` bytes
  huge              a 100 MB text result
  slow {ms}         answers after `ms` milliseconds (other requests wait)
  hang              never answers (other requests are answered)
  crash             writes to stderr, then exits with status 3
  garbage           writes a line that is not JSON
  not-rpc           writes a JSON value that is no JSON-RPC message
  bad-shape         answers with a result that is no tool result
  bad-answer        answers with JSON that is no JSON-RPC answer but has the id
  mismatch          structured content that breaks its own outputSchema
  list              structured content that is a list (MCP 2025-11-25 wants an object)
  env               structured: the environment it runs with
  spawn             starts `sleep 600` in its process group, answers its pid
"""

import json
import os
import subprocess
import sys
import time

args = sys.argv[1:]
out = sys.stdout.buffer


def flag(name):
    return name in args


def option(name, default=None):
    if name in args:
        return args[args.index(name) + 1]
    return default


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


if option("--exit") is not None:
    sys.stderr.write("unruly: exiting at once\n")
    sys.exit(int(option("--exit")))
if flag("--banner"):
    out.write(b"Welcome to unruly 1.0!\n")
    out.flush()

TOOLS = [
    {"name": n, "description": f"the {n} tool", "inputSchema": {"type": "object"}}
    for n in ["meta", "echo", "fail", "big", "huge", "slow", "hang", "crash", "garbage",
              "not-rpc", "bad-shape", "bad-answer", "mismatch", "list", "env", "spawn"]
]
next(t for t in TOOLS if t["name"] == "meta")["outputSchema"] = {
    "type": "object",
    "$defs": {"meta": {"type": "object", "title": "Meta"}},
    "properties": {"meta": {"$ref": "#/$defs/meta"}, "arguments": {"type": "object"}},
}
next(t for t in TOOLS if t["name"] == "mismatch")["outputSchema"] = {
    "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
}
children = []


def call(id, params):
    name = params.get("name")
    arguments = params.get("arguments") or {}
    if name == "meta":
        answer(id, {"content": [], "structuredContent": {"meta": params.get("_meta"), "arguments": arguments}})
    elif name == "echo":
        answer(id, text("Echo: " + str(arguments.get("message"))))
    elif name == "fail":
        answer(id, text("it \x1b[31mfailed\x1b[0m\x07", is_error=True))
    elif name == "big":
        answer(id, text("x" * int(arguments.get("size", 0))))
    elif name == "huge":
        head = json.dumps({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": ""}]}})
        # The text value streamed in pieces: 100 MB on one line.
        cut = head.index('"text": "') + len('"text": "')
        out.write(head[:cut].encode())
        chunk = b"y" * (1 << 20)
        for _ in range(100):
            out.write(chunk)
        out.write(head[cut:].encode() + b"\n")
        out.flush()
    elif name == "slow":
        time.sleep(int(arguments.get("ms", 100)) / 1000)
        answer(id, text("slept"))
    elif name == "hang":
        pass
    elif name == "crash":
        sys.stderr.write("unruly: \x1b[1mcrashing\x1b[0m on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    elif name == "garbage":
        out.write(b"<html>this is not json</html>\n")
        out.flush()
    elif name == "not-rpc":
        out.write(b"[1, 2, 3]\n")
        out.flush()
    elif name == "bad-shape":
        answer(id, "a string is no tool result")
    elif name == "bad-answer":
        send({"jsonrpc": "2.0", "id": id, "error": "an error must be an object"})
    elif name == "mismatch":
        answer(id, {"content": [], "structuredContent": {"n": "not an integer"}})
    elif name == "list":
        answer(id, {"content": [], "structuredContent": [1, 2]})
    elif name == "env":
        answer(id, {"content": [], "structuredContent": dict(os.environ)})
    elif name == "spawn":
        child = subprocess.Popen(["sleep", "600"])
        children.append(child)
        answer(id, {"content": [], "structuredContent": {"pid": child.pid, "server": os.getpid()}})
    else:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": f"Unknown tool: {name}"}})


def list_tools(id, params):
    tools = list(TOOLS)
    if flag("--list-changed") and initialized:
        tools.append({"name": "late", "inputSchema": {"type": "object"}})
    if flag("--bool-schema"):
        tools.append({"name": "bool", "inputSchema": True})
    pages = int(option("--pages", "1"))
    page = int((params or {}).get("cursor") or 0)
    size = -(-len(tools) // pages)
    result = {"tools": tools[page * size:(page + 1) * size]}
    if flag("--cursor-loop"):
        result["nextCursor"] = "1"
    elif page + 1 < pages:
        result["nextCursor"] = str(page + 1)
    answer(id, result)


initialized = False
for line in sys.stdin.buffer:
    if not line.strip():
        continue
    message = json.loads(line)
    method = message.get("method")
    id = message.get("id")
    params = message.get("params") or {}
    if method == "initialize":
        if flag("--silent"):
            continue
        answer(id, {"protocolVersion": params.get("protocolVersion"),
                    "capabilities": {"tools": {"listChanged": True}},
                    "serverInfo": {"name": "unruly", "version": "1.0"}})
    elif method == "notifications/initialized":
        initialized = True
        if flag("--list-changed"):
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    elif method == "ping":
        answer(id, {})
    elif method == "tools/list":
        list_tools(id, params)
    elif method == "tools/call":
        call(id, params)
    elif id is not None:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
