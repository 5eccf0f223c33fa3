#!/usr/bin/env python3
"""EXAMPLE MCP server for `lwirc run`: the two GitHub tools of
examples/issue-triage/workflow.json over MCP on standard input and output, answered from
canned data, without a network (plain JSON-RPC, so it needs nothing but python3). It lists
each tool exactly as the definition declares it (description, input and output schema), so
a version registered against that definition runs on it without drift:

  lwirc run VERSION --input examples/issue-triage/input.json \\
                    --bindings examples/issue-triage/bindings-mcp.json
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "..", "workflow.json"), encoding="utf-8") as f:
    DEFINITION = json.load(f)["tools"]

ISSUES = [
    {"number": 1, "title": "Crash when saving"},
    {"number": 2, "title": "Add dark mode"},
    {"number": 3, "title": "How do I export my data?"},
]

# MCP tool name -> the definition's tool id.
TOOLS = {"list_issues": "github.list_issues", "add_label": "github.add_label"}


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def listing():
    return [
        {
            "name": name,
            "description": DEFINITION[tool]["description"],
            "inputSchema": DEFINITION[tool]["input"],
            "outputSchema": DEFINITION[tool]["output"],
        }
        for name, tool in TOOLS.items()
    ]


def call(name, arguments):
    if name == "list_issues":
        value = {"items": ISSUES}
    elif name == "add_label":
        value = {"ok": True}
    else:
        return None
    return {"content": [{"type": "text", "text": json.dumps(value)}], "structuredContent": value}


for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    method, id = message.get("method"), message.get("id")
    params = message.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "github-example", "version": "1.0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": listing()}})
    elif method == "tools/call":
        result = call(params.get("name"), params.get("arguments") or {})
        if result is None:
            send({"jsonrpc": "2.0", "id": id,
                  "error": {"code": -32602, "message": f"unknown tool {params.get('name')}"}})
        else:
            send({"jsonrpc": "2.0", "id": id, "result": result})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": id, "result": {}})
    elif id is not None:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}})
