"""A bare stdio MCP server (no SDK) that, before answering tools/list, sends the client a
ping and a request the client does not serve, notes the answers, and reports them back as
the description of its one tool."""
import json
import sys


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def receive():
    line = sys.stdin.readline()
    return json.loads(line) if line else None


answers = {}
while True:
    message = receive()
    if message is None:
        break
    method = message.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "bare", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "listing"}})
        print("a stray log line that is not JSON", flush=True)
        send({"jsonrpc": "2.0", "id": 0, "method": "ping"})
        send({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {}})
        for _ in range(2):
            reply = receive()
            answers[str(reply.get("id"))] = reply
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": [{
            "name": "answers", "description": json.dumps(answers, sort_keys=True),
            "inputSchema": {"type": "object", "properties": {}}}]}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32000, "message": "no such luck"}})
