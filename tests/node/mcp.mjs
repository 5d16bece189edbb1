// The official TypeScript MCP SDKs against the gateway's /mcp: v1 (@modelcontextprotocol/sdk,
// the handshake era) or v2 (@modelcontextprotocol/client, 2026-07-28 with `auto`). Reads
// LLMEU_MCP_URL, LLMEU_API_KEY, MCP_SDK (v1 | v2); lists the tools, calls one, calls one with
// progress, calls one the key's policy does not admit, and prints what came back as JSON.
const sdk = process.env.MCP_SDK ?? "v1";
const url = new URL(process.env.LLMEU_MCP_URL);
const headers = { Authorization: `Bearer ${process.env.LLMEU_API_KEY}` };

let client;
let transport;
if (sdk === "v1") {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  client = new Client({ name: "llmeu-test", version: "1.0.0" });
  transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
} else {
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  client = new Client({ name: "llmeu-test", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
  transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
}
await client.connect(transport);
const era = typeof client.getDiscoverResult === "function" && client.getDiscoverResult() ? "modern" : "handshake";

const tools = (await client.listTools()).tools.map((t) => t.name);
const echo = await client.callTool({ name: "crm__echo", arguments: { text: "bonjour" } });
const progress = [];
const slowly = { name: "crm__count_slowly", arguments: { steps: 3, delay: 0.01 } };
const options = { onprogress: (p) => progress.push(p.progress) };
// v1 takes a result schema before the options; v2 takes the options second.
const counted = sdk === "v1" ? await client.callTool(slowly, undefined, options) : await client.callTool(slowly, options);
let refused = null;
try {
  await client.callTool({ name: "search__echo", arguments: { text: "x" } });
} catch (error) {
  refused = { code: error.code, message: error.message };
}
await client.close();
console.log(JSON.stringify({ era, tools, echo, counted, progress, refused }));
