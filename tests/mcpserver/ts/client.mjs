// The official MCP TypeScript SDK against /mcp/mailbox/: node client.mjs URL TOKEN THREAD_ID
// Prints one JSON object with what each call returned (tests/mcpserver/test_typescript_client.py checks it).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, threadId] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "mailagent-ts-test", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const search = await client.callTool({ name: "search_mail", arguments: { query: "from:alice subject:quarterly", limit: 5 } });
const thread = await client.callTool({ name: "read_thread", arguments: { thread_id: Number(threadId) } });
const draft = await client.callTool({ name: "create_draft", arguments: { thread_id: Number(threadId), body: "From TypeScript." } });
const refused = await client.callTool({ name: "request_send", arguments: { draft_id: draft.structuredContent?.draft_id ?? 0 } });
let unknown = null;
try {
  await client.callTool({ name: "no_such_tool", arguments: {} });
} catch (error) {
  unknown = { code: error.code, message: String(error.message) };
}
console.log(
  JSON.stringify({
    server: client.getServerVersion(),
    tools: tools.tools.map((tool) => tool.name).sort(),
    search: search.structuredContent,
    thread: thread.structuredContent,
    draft: draft.structuredContent,
    refused: { isError: refused.isError, text: refused.content?.[0]?.text ?? "" },
    unknown,
  }),
);
await client.close();
