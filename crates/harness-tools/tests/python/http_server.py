import sys
from mcp.server.mcpserver import MCPServer

app = MCPServer("py-test")

@app.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)

mode, port = sys.argv[1], int(sys.argv[2])
app.run("streamable-http", host="127.0.0.1", port=port, json_response=(mode == "json"))
