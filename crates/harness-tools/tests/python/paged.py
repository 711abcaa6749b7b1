import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
import mcp.server.stdio

TOOLS = [types.Tool(name=f"tool_{i}", description=f"Tool number {i}.", input_schema={"type": "object", "properties": {}}) for i in range(5)]

async def list_tools(ctx, params):
    start = int(params.cursor) if params is not None and params.cursor else 0
    page = TOOLS[start:start + 2]
    nxt = str(start + 2) if start + 2 < len(TOOLS) else None
    return types.ListToolsResult(tools=page, next_cursor=nxt)

async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"called {params.name}")])

server = Server("paged", on_list_tools=list_tools, on_call_tool=call_tool)

async def main():
    async with mcp.server.stdio.stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
