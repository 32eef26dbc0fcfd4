"""Talk to `memory-core mcp URL` over stdio: python mcp_client.py [URL]"""

import json
import os
import sys

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

URL = sys.argv[1] if len(sys.argv) > 1 else "memory://"
ARGS = ["-m", "memory_core.cli", "mcp", URL]  # the server reads MEMORY_API_KEY etc. from env
SERVER = StdioServerParameters(command=sys.executable, args=ARGS, env=dict(os.environ))


async def call(mcp, tool, **arguments):
    return json.loads((await mcp.call_tool(tool, arguments)).content[0].text)


async def main():
    async with stdio_client(SERVER) as (read, write), ClientSession(read, write) as mcp:
        await mcp.initialize()
        tools = [tool.name for tool in (await mcp.list_tools()).tools]
        session = "mcp-demo"
        if "start_session" in tools:  # stores that issue session ids (NAMS)
            session = (await call(mcp, "start_session", name=session))["session_id"]
        try:
            await call(mcp, "add_message", session_id=session, role="user", content="I am Ana.")
            print(tools, await call(mcp, "recent_messages", session_id=session))
        finally:  # a demo: leave the store as it was (a re-run starts afresh)
            await call(mcp, "clear_session", session_id=session)


anyio.run(main)
