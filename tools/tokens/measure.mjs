#!/usr/bin/env node
// Measures what a host's model sees of MCP tool definitions, in o200k_base
// tokens (gpt-tokenizer): for other MCP servers, their tools/list as they
// start; for `manglecp mcp`, the tools/list of every turn of a scripted
// session (a scenario file). Nothing is estimated: every server is started
// and asked over MCP (the official TypeScript SDK client, stdio).
//
// Usage (from the repository root, after scripts/deps/npm.sh):
//
//   go build -o /tmp/manglecp ./cmd/manglecp
//   node tools/tokens/measure.mjs --manglecp /tmp/manglecp [--json] [--check]
//        [--servers tools/tokens/servers.json] [SCENARIO.json ...]
//
// Without scenario arguments every tools/tokens/scenarios/*.json runs.
// --check exits 1 when a turn of a scenario exceeds its "max_ratio" of the
// named server's figure, measured in the same run. docs/TOKENS.md explains
// the counts.
//
// Counts: "defs" is the tokens of JSON.stringify of the tools reduced to
// {name, description, inputSchema} (the method of the reference figures of
// issue 10: Playwright MCP 3,764, chrome-devtools-mcp 6,148); "list" is the tokens of
// JSON.stringify of the whole tools array as the server sent it (titles,
// annotations, output schemas included).

import { createRequire } from "node:module";
import { readFileSync, readdirSync, mkdtempSync } from "node:fs";
import { join, dirname, resolve } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..", "..");
const npmDir = join(root, ".cache", "npm");
const req = createRequire(join(npmDir, "package.json"));
const load = async (name) => import(pathToFileURL(req.resolve(name)).href);

const { encode } = await load("gpt-tokenizer/encoding/o200k_base");
const { Client } = await load("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = await load("@modelcontextprotocol/sdk/client/stdio.js");
const { ToolListChangedNotificationSchema } = await load("@modelcontextprotocol/sdk/types.js");

const tokens = (s) => encode(s ?? "").length;

// count returns the o200k figures of one tools array.
export function count(tools) {
  const defs = tokens(JSON.stringify(tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }))));
  return { tools: tools.length, names: tools.map((t) => t.name), defs, list: tokens(JSON.stringify(tools)) };
}

function parseArgs(argv) {
  const o = { manglecp: "manglecp", json: false, check: false, servers: join(here, "servers.json"), scenarios: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--manglecp") o.manglecp = argv[++i];
    else if (a === "--json") o.json = true;
    else if (a === "--check") o.check = true;
    else if (a === "--servers") o.servers = argv[++i];
    else if (a.startsWith("--")) throw new Error(`unknown flag ${a}`);
    else o.scenarios.push(a);
  }
  if (o.scenarios.length === 0) {
    const dir = join(here, "scenarios");
    o.scenarios = readdirSync(dir).filter((f) => f.endsWith(".json")).sort().map((f) => join(dir, f));
  }
  return o;
}

// expand replaces the placeholders of a server command: ${npm} (the
// node_modules directory), ${manglecp} (the binary), ${tmp} (a fresh
// directory).
function expand(s, opts, tmp) {
  return s
    .replaceAll("${npm}", join(npmDir, "node_modules"))
    .replaceAll("${manglecp}", opts.manglecp)
    .replaceAll("${tmp}", tmp)
    .replaceAll("${root}", root);
}

async function connect(server, opts, onListChanged) {
  const tmp = mkdtempSync(join(tmpdir(), "tokens-"));
  const command = expand(server.command, opts, tmp);
  const args = (server.args ?? []).map((a) => expand(a, opts, tmp));
  const transport = new StdioClientTransport({ command, args, stderr: "ignore", env: { ...process.env, ...(server.env ?? {}) } });
  const client = new Client({ name: "manglecp-tokens", version: "1.0.0" }, { capabilities: {} });
  if (onListChanged) client.setNotificationHandler(ToolListChangedNotificationSchema, onListChanged);
  await client.connect(transport, { timeout: 60000 });
  return client;
}

async function listAll(client) {
  const tools = [];
  let cursor;
  do {
    const r = await client.listTools(cursor ? { cursor } : {});
    tools.push(...r.tools);
    cursor = r.nextCursor;
  } while (cursor);
  return tools;
}

// measureServer starts a server and counts its tools/list.
async function measureServer(s, opts) {
  const client = await connect(s, opts);
  try {
    return { name: s.name, package: s.package, ...count(await listAll(client)) };
  } finally {
    await client.close();
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// runScenario plays a scenario's turns and counts the tool list the model
// sees at each turn (after any list_changed the previous call caused).
//
// A scenario with "app": {"dir": DIR} gets DIR (relative to the repository
// root) served over HTTP on a loopback port for its run; "${app}" in call
// arguments is that server's URL (the browser domain's job opens a page).
async function runScenario(file, opts) {
  const sc = JSON.parse(readFileSync(file, "utf8"));
  const app = sc.app ? await serveDir(join(root, sc.app.dir)) : null;
  const args = (v) => JSON.parse(JSON.stringify(v ?? {}).replaceAll("${app}", app ? app.url : "${app}"));
  let changed = 0;
  const client = await connect(sc.server, opts, () => { changed++; });
  const turns = [];
  try {
    for (const [i, turn] of (sc.turns ?? []).entries()) {
      let result = null;
      if (turn.call) {
        const before = changed;
        const r = await client.callTool({ name: turn.call.name, arguments: args(turn.call.arguments) }, undefined, { timeout: 120000 });
        if (r.isError && !turn.expect_error) {
          throw new Error(`${file}: turn ${i} (${turn.call.name}) failed: ${JSON.stringify(r.content)}`);
        }
        // "expect_contains": strings the call's answer must hold (the job succeeded).
        const answer = JSON.stringify(r.content) + JSON.stringify(r.structuredContent ?? null);
        for (const want of [].concat(turn.expect_contains ?? []).map((w) => args(w))) {
          if (!answer.includes(want)) throw new Error(`${file}: turn ${i} (${turn.call.name}): the answer lacks ${JSON.stringify(want)}: ${answer.slice(0, 2000)}`);
        }
        result = { isError: !!r.isError, tokens: tokens(JSON.stringify(r.content)) + (r.structuredContent ? tokens(JSON.stringify(r.structuredContent)) : 0) };
        // A list change is sent a few milliseconds after the call returns.
        for (let w = 0; w < 20 && changed === before && turn.expect_list_changed; w++) await sleep(25);
        if (turn.expect_list_changed && changed === before) throw new Error(`${file}: turn ${i}: no tools/list_changed`);
      }
      turns.push({ turn: i, note: turn.note ?? "", call: turn.call?.name ?? null, result, ...count(await listAll(client)) });
    }
  } finally {
    await client.close();
    if (app) app.close();
  }
  return { file, name: sc.name, max_ratio: sc.max_ratio ?? null, turns };
}

// serveDir serves the files of dir (no listing; anything else is 404) on
// 127.0.0.1 and returns {url, close}.
async function serveDir(dir) {
  const { createServer } = await import("node:http");
  const srv = createServer((req, res) => {
    const name = decodeURIComponent(new URL(req.url, "http://x").pathname).replace(/^\/+/, "");
    let body = null;
    if (name && !name.includes("..") && !name.includes("/")) {
      try { body = readFileSync(join(dir, name)); } catch { body = null; }
    }
    if (body === null) { res.writeHead(404, { "Content-Type": "text/plain" }); res.end("not found"); return; }
    res.writeHead(200, { "Content-Type": name.endsWith(".html") ? "text/html; charset=utf-8" : "application/octet-stream" });
    res.end(body);
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${srv.address().port}`, close: () => srv.close() };
}

const opts = parseArgs(process.argv.slice(2));
const servers = JSON.parse(readFileSync(opts.servers, "utf8"));
const out = { tokenizer: "o200k_base (gpt-tokenizer)", node: process.version, servers: [], scenarios: [] };
for (const s of servers) out.servers.push(await measureServer(s, opts));
for (const f of opts.scenarios) out.scenarios.push(await runScenario(f, opts));

let failed = false;
for (const sc of out.scenarios) {
  if (!sc.max_ratio) continue;
  const ref = out.servers.find((s) => s.name === sc.max_ratio.of);
  if (!ref) {
    if (opts.check) throw new Error(`${sc.file}: max_ratio names ${sc.max_ratio.of}, which was not measured`);
    continue;
  }
  sc.limit = { of: ref.name, ratio: sc.max_ratio.ratio, defs: ref.defs * sc.max_ratio.ratio, list: ref.list * sc.max_ratio.ratio };
  for (const t of sc.turns) {
    t.within_limit = t.defs <= sc.limit.defs && t.list <= sc.limit.list;
    if (!t.within_limit) failed = true;
  }
}

const n = (x) => x.toLocaleString("en-US", { maximumFractionDigits: 0 });
if (opts.json) {
  console.log(JSON.stringify(out, null, 2));
} else {
  console.log(`Tokenizer: ${out.tokenizer}; node ${out.node}\n`);
  console.log("| Server | Tools | name+description+inputSchema | whole tools/list |");
  console.log("|---|---:|---:|---:|");
  for (const s of out.servers) console.log(`| ${s.name} (${s.package}) | ${s.tools} | ${n(s.defs)} | ${n(s.list)} |`);
  for (const sc of out.scenarios) {
    console.log(`\n${sc.name}${sc.limit ? ` (limit per turn: ${sc.limit.ratio} of ${sc.limit.of} = ${n(sc.limit.defs)} / ${n(sc.limit.list)})` : ""}\n`);
    console.log("| Turn | Call | Tools listed | name+description+inputSchema | whole tools/list | call result | within limit |");
    console.log("|---:|---|---|---:|---:|---:|---|");
    for (const t of sc.turns) {
      console.log(`| ${t.turn} | ${t.call ?? "(start)"} | ${t.tools}: ${t.names.join(", ")} | ${n(t.defs)} | ${n(t.list)} | ${t.result ? n(t.result.tokens) : "-"} | ${t.within_limit === undefined ? "-" : t.within_limit ? "yes" : "**no**"} |`);
    }
  }
}
if (opts.check && failed) {
  console.error("tokens: a turn exceeds its limit");
  process.exit(1);
}
process.exit(0);
