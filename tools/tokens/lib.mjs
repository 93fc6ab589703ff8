// Shared helpers of measure.mjs and jobs.mjs: the npm packages of
// .cache/npm, o200k counting, starting an MCP server and connecting the
// official TypeScript SDK client to it, scenario files and their checks.

import { createRequire } from "node:module";
import { readFileSync, mkdtempSync, mkdirSync, writeFileSync, existsSync, realpathSync, statSync } from "node:fs";
import { join, dirname, basename, resolve, extname, sep } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath, pathToFileURL } from "node:url";

export const here = dirname(fileURLToPath(import.meta.url));
export const root = resolve(here, "..", "..");
export const npmDir = join(root, ".cache", "npm");
const req = createRequire(join(npmDir, "package.json"));
const load = async (name) => import(pathToFileURL(req.resolve(name)).href);

const { encode } = await load("gpt-tokenizer/encoding/o200k_base");
const { Client } = await load("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = await load("@modelcontextprotocol/sdk/client/stdio.js");
const { ToolListChangedNotificationSchema, ElicitRequestSchema } = await load("@modelcontextprotocol/sdk/types.js");

// tokens counts the o200k_base tokens of a string.
export const tokens = (s) => encode(s ?? "").length;

// defsOf reduces a tools array to what a model sees of it: name,
// description and inputSchema.
export const defsOf = (tools) => tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));

// count returns the o200k figures of one tools array.
export function count(tools) {
  const defs = tokens(JSON.stringify(defsOf(tools)));
  return { tools: tools.length, names: tools.map((t) => t.name), defs, list: tokens(JSON.stringify(tools)) };
}

// packageVersion is the installed version of an npm package of .cache/npm.
export function packageVersion(name) {
  try {
    return JSON.parse(readFileSync(join(npmDir, "node_modules", name, "package.json"), "utf8")).version;
  } catch {
    return "?";
  }
}

// expand replaces the placeholders of a server command: ${npm} (the
// node_modules directory), ${manglecp} (the binary), ${tmp} (a fresh
// directory), ${root} (the repository), ${chromium} (the browser).
export function expand(s, opts, tmp) {
  return s
    .replaceAll("${npm}", join(npmDir, "node_modules"))
    .replaceAll("${manglecp}", resolve(opts.manglecp))
    .replaceAll("${tmp}", tmp)
    .replaceAll("${root}", root)
    .replaceAll("${chromium}", opts.chromium ?? "/usr/bin/chromium");
}

// writeTree writes a scenario's files ({"relative/path": "content"}) into
// dir; tree may also name a JSON file of the repository whose "tree" key
// holds them (domains/workspace/testdata/scenario.json).
export function writeTree(dir, tree) {
  if (!tree) return;
  if (typeof tree === "string") tree = JSON.parse(readFileSync(join(root, tree), "utf8")).tree;
  for (const [rel, content] of Object.entries(tree)) {
    const p = join(dir, rel);
    if (!p.startsWith(dir + "/")) throw new Error(`tree path ${rel} leaves the directory`);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, content);
  }
}

// connect starts a server (in a fresh directory, its working directory and
// ${tmp}) and connects the SDK client to it. hooks: onListChanged
// (tools/list_changed), onElicit (elicitation/create: the client then
// declares the elicitation capability, as a host that asks its user
// does), tree (files for ${tmp}).
export async function connect(server, opts, hooks = {}) {
  const tmp = mkdtempSync(join(tmpdir(), "tokens-"));
  writeTree(tmp, hooks.tree);
  const command = expand(server.command, opts, tmp);
  const args = (server.args ?? []).map((a) => expand(a, opts, tmp));
  // env values take the placeholders too, and ${PATH} (this process's PATH).
  const env = Object.fromEntries(Object.entries(server.env ?? {}).map(([k, v]) => [k, expand(v, opts, tmp).replaceAll("${PATH}", process.env.PATH ?? "")]));
  const transport = new StdioClientTransport({ command, args, cwd: tmp, stderr: "ignore", env: { ...process.env, ...env } });
  const capabilities = hooks.onElicit ? { elicitation: { form: {} } } : {};
  const client = new Client({ name: "manglecp-tokens", version: "1.0.0" }, { capabilities });
  if (hooks.onListChanged) client.setNotificationHandler(ToolListChangedNotificationSchema, hooks.onListChanged);
  if (hooks.onElicit) client.setRequestHandler(ElicitRequestSchema, hooks.onElicit);
  await client.connect(transport, { timeout: 60000 });
  client.tmp = tmp;
  return client;
}

// listAll reads the whole tools/list (all pages).
export async function listAll(client) {
  const tools = [];
  let cursor;
  do {
    const r = await client.listTools(cursor ? { cursor } : {});
    tools.push(...r.tools);
    cursor = r.nextCursor;
  } while (cursor);
  return tools;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// resolveRefs replaces, in a turn's arguments, every string "$N.a.b" with
// field a.b of the structuredContent of turn N's call (for example the
// edit id a preview returned, "$6.result.edit"), and every object
// {"$match": [N, "regexp"]} with the first group of regexp matched against
// the text of turn N's answer (a Playwright element ref of a snapshot),
// read as JSON with "json": true (a JSON string of the answer).
export function resolveRefs(v, results, texts = []) {
  if (typeof v === "string") {
    const m = /^\$(\d+)((?:\.[A-Za-z0-9_]+)+)$/.exec(v);
    if (!m) return v;
    let x = results[Number(m[1])];
    for (const k of m[2].slice(1).split(".")) x = x?.[k];
    if (x === undefined) throw new Error(`${v}: no such field in turn ${m[1]}'s result`);
    return x;
  }
  if (Array.isArray(v)) return v.map((e) => resolveRefs(e, results, texts));
  if (v && typeof v === "object") {
    if (Array.isArray(v.$match)) {
      const [n, re] = v.$match;
      const m = new RegExp(re).exec(texts[n] ?? "");
      if (!m) throw new Error(`$match ${re}: not in turn ${n}'s answer`);
      return v.json ? JSON.parse(m[1] ?? m[0]) : m[1] ?? m[0];
    }
    return Object.fromEntries(Object.entries(v).map(([k, e]) => [k, resolveRefs(e, results, texts)]));
  }
  return v;
}

// checkFiles compares a scenario's expect_files with the files under dir:
// {"path": {"exists": bool, "contains": "text"}}; it returns the failures.
export function checkFiles(dir, want) {
  const bad = [];
  for (const [rel, w] of Object.entries(want ?? {})) {
    const p = join(dir, rel);
    const ok = existsSync(p);
    if (w.exists !== undefined && ok !== w.exists) bad.push(`${rel}: exists is ${ok}, want ${w.exists}`);
    if (w.contains !== undefined && !(ok && readFileSync(p, "utf8").includes(w.contains))) bad.push(`${rel}: does not contain ${JSON.stringify(w.contains)}`);
  }
  return bad;
}

// contentTypes are the Content-Types serveDir answers by file extension
// (the same as testapp.Serve's in Go).
const contentTypes = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".json": "application/json",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".ico": "image/x-icon",
};

// withLayout is page name as served, as testapp's withLayout in Go: a page
// whose first line is "<!-- layout: FILE -->" is FILE (same directory,
// inside dir) with {{title}} its second line, {{content}} the rest (without
// its last newline) and its own link in the layout's <nav> marked
// aria-current="page"; any other file as it is. A missing layout throws
// (serveDir answers 404).
function withLayout(base, name, body) {
  const m = /^<!-- layout: (.*) -->\n/.exec(body.subarray(0, 256).toString("latin1"));
  if (!m) return body;
  const page = body.toString("utf8");
  const rest = page.slice(page.indexOf("\n") + 1);
  const cut = rest.indexOf("\n");
  const title = cut < 0 ? rest : rest.slice(0, cut);
  const content = cut < 0 ? "" : rest.slice(cut + 1).replace(/\n$/, "");
  const layoutPath = realpathSync(join(base, dirname(name), m[1]));
  if (!layoutPath.startsWith(base + sep)) throw new Error("layout outside the app");
  let out = readFileSync(layoutPath, "utf8");
  const link = `<a href="${basename(name)}">`;
  const nav = out.indexOf("<nav");
  const i = nav < 0 ? -1 : out.indexOf(link, nav);
  if (i >= 0) out = out.slice(0, i + link.length - 1) + ' aria-current="page"' + out.slice(i + link.length - 1);
  return Buffer.from(out.replace("{{title}}", () => title).replace("{{content}}", () => content));
}

// serveDir serves the static app of dir on 127.0.0.1 and returns {url,
// close}, as testapp.Serve does for the Go tests: GET and HEAD get the
// files of dir and its subdirectories ("/" is index.html) by their
// extension's Content-Type; the routes of dir/app.json ({"routes":
// {"/path": {"status", "type", "body"}}}) get their fixed answer whatever
// the method. A directory, app.json itself, a path with "." or ".."
// elements and a path leaving dir (also through a symbolic link) answer
// 404 (no listing); other methods 405.
export async function serveDir(dir) {
  const { createServer } = await import("node:http");
  const base = realpathSync(dir);
  const cfg = join(base, "app.json");
  const routes = existsSync(cfg) ? JSON.parse(readFileSync(cfg, "utf8")).routes ?? {} : {};
  const file = (pathname) => {
    const name = pathname.replace(/^\//, "") || "index.html";
    const parts = name.split("/");
    if (name === "app.json" || name.includes("\\") || name.includes("\0") || parts.some((p) => p === "" || p === "." || p === "..")) return null;
    try {
      const p = realpathSync(join(base, ...parts));
      if (!p.startsWith(base + sep) || !statSync(p).isFile()) return null;
      return { name, body: withLayout(base, name, readFileSync(p)) };
    } catch {
      return null;
    }
  };
  const srv = createServer((req, res) => {
    let pathname = null;
    try { pathname = decodeURIComponent(new URL(req.url, "http://x").pathname); } catch { pathname = null; }
    const route = pathname !== null && Object.hasOwn(routes, pathname) ? routes[pathname] : null;
    if (route) {
      res.writeHead(route.status, { "Content-Type": route.type });
      res.end(route.body);
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") { res.writeHead(405, { "Content-Type": "text/plain", Allow: "GET, HEAD" }); res.end("method not allowed"); return; }
    const f = pathname === null ? null : file(pathname);
    if (f === null) { res.writeHead(404, { "Content-Type": "text/plain" }); res.end("not found"); return; }
    res.writeHead(200, { "Content-Type": contentTypes[extname(f.name)] ?? "application/octet-stream" });
    res.end(req.method === "HEAD" ? undefined : f.body);
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${srv.address().port}`, close: () => srv.close() };
}

// resultTokens counts an answer as a host passes it to the model: every
// content item (the text of a text item, any other item as JSON) plus
// structuredContent as JSON.
export function resultTokens(r) {
  let n = 0;
  for (const c of r.content ?? []) n += tokens(c.type === "text" ? c.text : JSON.stringify(c));
  return n + (r.structuredContent ? tokens(JSON.stringify(r.structuredContent)) : 0);
}

// resultTextTokens counts an answer as a host that passes text content
// only gives it to the model: every content item (the text of a text
// item, any other item as JSON), without structuredContent.
export function resultTextTokens(r) {
  let n = 0;
  for (const c of r.content ?? []) n += tokens(c.type === "text" ? c.text : JSON.stringify(c));
  return n;
}

// unescapeJSON reads the JSON string escapes of an answer's text as a
// model does (an answer that prints JSON shows "a\nb" for two lines).
export function unescapeJSON(s) {
  return s.replace(/\\(["\\/bfnrt]|u[0-9a-fA-F]{4})/g, (m, c) => {
    if (c[0] === "u") return String.fromCharCode(parseInt(c.slice(1), 16));
    return { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" }[c];
  });
}

// unshown returns why a scripted call uses what the model could not know:
// each object key (a tool's parameter, at any depth) must occur as a word
// in what the model read before the call (seen: the task, the tool list
// of the turn, every earlier call and answer), and each string value
// (the tool name invoke_macro_tool takes, a path, a text) must occur in
// it, or, composed, be made of pieces that do (a path joined from shown
// segments, a glob around a shown extension, a line of code with a shown
// name in place of another: pieces are the runs of letters, digits and
// _ : @ -). Numbers and booleans are
// the model's; so are strings of one or two characters. [] when honest.
export function unshown(name, args, seen) {
  const bad = [];
  const word = (w) => new RegExp(`(^|[^A-Za-z0-9_])${w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}($|[^A-Za-z0-9_])`).test(seen);
  if (!word(name)) bad.push(`the tool ${name} was not shown`);
  const value = (v, at) => {
    if (typeof v !== "string" || v.length <= 2 || seen.includes(v)) return;
    const pieces = v.split(/[^A-Za-z0-9_:@-]+/).filter((p) => p.length > 2);
    const missing = pieces.filter((p) => !seen.includes(p));
    if (missing.length > 0) bad.push(`the value ${JSON.stringify(v.slice(0, 80))} of ${at} was not shown${missing.length ? ` (${missing.slice(0, 3).map((m) => JSON.stringify(m.slice(0, 40))).join(", ")})` : ""}`);
  };
  const walk = (v, at) => {
    if (Array.isArray(v)) v.forEach((e, i) => walk(e, `${at}[${i}]`));
    else if (v && typeof v === "object") {
      for (const [k, e] of Object.entries(v)) {
        if (!word(k)) bad.push(`the parameter ${k} (${at}) was not shown`);
        walk(e, at ? `${at}.${k}` : k);
      }
    } else value(v, at);
  };
  walk(args ?? {}, "");
  return bad;
}

// answerText is the text the job's checks search: every content item and
// structuredContent.
export function answerText(r) {
  return JSON.stringify(r.content ?? []) + JSON.stringify(r.structuredContent ?? null);
}
