// The MCP TypeScript SDK's client drives a scaffolded domain's binary over
// stdio (`BIN mcp`), as an MCP host that asks its user does: it lists the
// tools, calls the intent tool, show_logs, and rollback, which the bridge
// runs only after the client accepted the elicitation.
//   node scripts/checks/scaffold-mcp.mjs BIN
import { createRequire } from "node:module";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const req = createRequire(join(root, ".cache", "npm", "package.json"));
const load = async (name) => import(pathToFileURL(req.resolve(name)).href);
const { Client } = await load("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = await load("@modelcontextprotocol/sdk/client/stdio.js");
const { ElicitRequestSchema } = await load("@modelcontextprotocol/sdk/types.js");

const bin = process.argv[2];
let asked = 0;
const client = new Client({ name: "scaffold-check", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
client.setRequestHandler(ElicitRequestSchema, async () => {
  asked++;
  return { action: "accept", content: {} };
});
await client.connect(new StdioClientTransport({ command: bin, args: ["mcp"], stderr: "ignore" }), { timeout: 60000 });
const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
const fail = (msg) => {
  console.error("FAIL " + msg);
  process.exitCode = 1;
};

const names = (await client.listTools()).tools.map((t) => t.name).sort().join(",");
if (names !== "invoke_macro_tool,triage") fail(`tools/list: ${names}`);
else console.log("ok   TypeScript SDK: tools/list is triage and invoke_macro_tool");

let r = await client.callTool({ name: "triage", arguments: { facts: [["incident", "INC-1", "checkout"]] } });
if (r.isError || !text(r).includes("show_logs(") || !text(r).includes("rollback(")) fail(`triage: ${text(r)}`);
else console.log("ok   TypeScript SDK: triage selects show_logs and rollback");

r = await client.callTool({ name: "invoke_macro_tool", arguments: { tool: "show_logs", arguments: { service: "checkout" } } });
if (r.isError || !text(r).includes("checkout's log")) fail(`show_logs: ${text(r)}`);
else console.log("ok   TypeScript SDK: show_logs runs");

r = await client.callTool({ name: "invoke_macro_tool", arguments: { tool: "rollback", arguments: { service: "checkout" } } });
if (r.isError || asked !== 1 || !text(r).includes("Rolled back checkout")) fail(`rollback (asked ${asked}): ${text(r)}`);
else console.log("ok   TypeScript SDK: rollback runs once the user accepted");
await client.close();
