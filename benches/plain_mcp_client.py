#!/usr/bin/env python3
"""The plain client `benches/run.sh` compares `lwirc run` with: no SDK, no log, nothing
durable. It starts an MCP server over stdio (the command line after `--`), makes the
handshake, then calls tool TOOL N times with `{"message": "item I"}`, keeping at most
PARALLEL requests in flight (the `max_parallel` of the map it stands for), and checks
that every answer came. Prints the number of answers.

  plain_mcp_client.py N PARALLEL TOOL -- node dist/index.js stdio
"""

import json
import subprocess
import sys

n, parallel, tool = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
command = sys.argv[sys.argv.index("--") + 1:]
server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
out, inp = server.stdin, server.stdout


def send(message):
    out.write(json.dumps(message).encode() + b"\n")


def receive():
    while True:
        line = inp.readline()
        if not line:
            sys.exit("the server went away")
        message = json.loads(line)
        if "id" in message and ("result" in message or "error" in message):
            return message


send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
      "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                 "clientInfo": {"name": "plain", "version": "1"}}})
out.flush()
receive()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})

sent = answered = 0
while answered < n:
    while sent < n and sent - answered < parallel:
        send({"jsonrpc": "2.0", "id": sent + 1, "method": "tools/call",
              "params": {"name": tool, "arguments": {"message": f"item {sent}"}}})
        sent += 1
    out.flush()
    answer = receive()
    if "error" in answer or answer["result"].get("isError"):
        sys.exit(f"call {answer['id']} failed: {answer}")
    answered += 1
out.close()
server.wait()
print(answered)
