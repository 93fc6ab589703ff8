#!/usr/bin/env node
// Measures what a whole job costs a host's model, in o200k_base tokens
// (gpt-tokenizer): each job of tools/tokens/jobs/*.json driven through an
// anchor MCP server and through `manglecp mcp` with the same scripted
// steps (jobs.mjs: M1, M2, M3, done), and the anchors' static tools/list
// (servers.json). Nothing is estimated: every server is started and asked
// over MCP (the official TypeScript SDK client, stdio).
//
// Usage (from the repository root, after scripts/deps/npm.sh):
//
//   go build -o /tmp/manglecp ./cmd/manglecp
//   node tools/tokens/measure.mjs --manglecp /tmp/manglecp [--chromium PATH] [--json] [--check]
//        [--repeat N] [--servers tools/tokens/servers.json] [JOB.json ...]
//
// Without file arguments every tools/tokens/jobs/*.json runs (and the
// per-turn scenario files of tools/tokens/scenarios/*.json, if any).
// --check exits 1 when a job is not done or a total exceeds one of its
// gates (ratios to the anchor measured in the same run); targets are
// reported. --repeat N plays each job's runs N times, interleaved, for the
// median wall time of each run (the tokens are the first repetition's).
// docs/TOKENS.md explains the counts, the wall time and the job format.
//
// Counts: "defs" is the tokens of JSON.stringify of the tools reduced to
// {name, description, inputSchema} (the method of the reference figures of
// issue 10: Playwright MCP 3,764, chrome-devtools-mcp 6,148); "list" is the tokens of
// JSON.stringify of the whole tools array as the server sent it (titles,
// annotations, output schemas included).

import { readFileSync, readdirSync, rmSync, existsSync } from "node:fs";
import { join } from "node:path";
import { here, tokens, count, connect, listAll, sleep, resolveRefs, checkFiles, serveDir, root } from "./lib.mjs";
import { runJob, printJobs } from "./jobs.mjs";

function parseArgs(argv) {
  const o = { manglecp: "manglecp", json: false, check: false, servers: join(here, "servers.json"), scenarios: [], jobs: [], chromium: "/usr/bin/chromium" };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--manglecp") o.manglecp = argv[++i];
    else if (a === "--chromium") o.chromium = argv[++i];
    else if (a === "--json") o.json = true;
    else if (a === "--check") o.check = true;
    else if (a === "--repeat") {
      o.repeat = Number(argv[++i]);
      if (!Number.isInteger(o.repeat) || o.repeat < 1) throw new Error("--repeat wants a positive integer");
    }
    else if (a === "--servers") o.servers = argv[++i];
    else if (a.startsWith("--")) throw new Error(`unknown flag ${a}`);
    else if (JSON.parse(readFileSync(a, "utf8")).runs) o.jobs.push(a);
    else o.scenarios.push(a);
  }
  if (o.scenarios.length === 0 && o.jobs.length === 0) {
    const ls = (d) => (existsSync(join(here, d)) ? readdirSync(join(here, d)) : []).filter((f) => f.endsWith(".json")).sort().map((f) => join(here, d, f));
    o.jobs = ls("jobs");
    o.scenarios = ls("scenarios");
  }
  return o;
}

// measureServer starts a server and counts its tools/list.
async function measureServer(s, opts) {
  const client = await connect(s, opts);
  try {
    return { name: s.name, package: s.package, ...count(await listAll(client)) };
  } finally {
    await client.close();
    rmSync(client.tmp, { recursive: true, force: true });
  }
}

// runScenario plays a scenario's turns and counts the tool list the model
// sees at each turn (after any list_changed the previous call caused).
// The job succeeded when every call answered as the turn expects
// (expect_error, expect_contains, expect_list_changed) and the files of
// ${tmp} match expect_files.
//
// A scenario with "app": {"dir": DIR} gets DIR (relative to the repository
// root) served over HTTP on a loopback port for its run; "${app}" in call
// arguments and expect_contains is that server's URL (the browser domain's
// job opens a page). "tree" fills ${tmp} before the server starts;
// "elicitation": "accept" makes the client a host that asks its user and
// the user accepts.
async function runScenario(file, opts) {
  const sc = JSON.parse(readFileSync(file, "utf8"));
  const app = sc.app ? await serveDir(join(root, sc.app.dir)) : null;
  const withApp = (v) => JSON.parse(JSON.stringify(v ?? {}).replaceAll("${app}", app ? app.url : "${app}"));
  let changed = 0;
  let asked = [];
  const hooks = { onListChanged: () => { changed++; }, tree: sc.tree };
  if (sc.elicitation) {
    hooks.onElicit = async (req) => {
      asked.push(req.params.message);
      return sc.elicitation === "accept" ? { action: "accept", content: {} } : { action: sc.elicitation };
    };
  }
  let client;
  const turns = [];
  const results = [];
  const failures = [];
  try {
    client = await connect(sc.server, opts, hooks);
    for (const [i, turn] of (sc.turns ?? []).entries()) {
      let result = null;
      if (turn.call) {
        const before = changed;
        asked = [];
        const args = resolveRefs(withApp(turn.call.arguments), results);
        const r = await client.callTool({ name: turn.call.name, arguments: args }, undefined, { timeout: 120000 });
        results[i] = r.structuredContent ?? null;
        const answer = JSON.stringify(r.content) + JSON.stringify(r.structuredContent ?? null);
        if (!!r.isError !== !!turn.expect_error) {
          failures.push(`turn ${i} (${turn.call.name}): ${r.isError ? "failed" : "did not fail"}: ${answer.slice(0, 500)}`);
        }
        for (const want of [].concat(turn.expect_contains ?? []).map((w) => withApp(w))) {
          if (!answer.includes(want)) failures.push(`turn ${i} (${turn.call.name}): the answer lacks ${JSON.stringify(want)}: ${answer.slice(0, 500)}`);
        }
        result = { isError: !!r.isError, tokens: tokens(JSON.stringify(r.content)) + (r.structuredContent ? tokens(JSON.stringify(r.structuredContent)) : 0), asked: asked.length };
        // A list change is sent a few milliseconds after the call returns.
        for (let w = 0; w < 200 && changed === before && turn.expect_list_changed; w++) await sleep(25);
        if (turn.expect_list_changed && changed === before) failures.push(`turn ${i} (${turn.call.name}): no tools/list_changed`);
      }
      turns.push({ turn: i, note: turn.note ?? "", call: turn.call?.name ?? null, result, ...count(await listAll(client)) });
    }
    failures.push(...checkFiles(client.tmp, sc.expect_files));
  } finally {
    if (client) {
      await client.close();
      rmSync(client.tmp, { recursive: true, force: true });
    }
    if (app) app.close();
  }
  return { file, name: sc.name, spec: { max_ratio: sc.max_ratio, limits: sc.limits }, turns, succeeded: failures.length === 0, failures };
}

const opts = parseArgs(process.argv.slice(2));
const servers = JSON.parse(readFileSync(opts.servers, "utf8"));
const out = { tokenizer: "o200k_base (gpt-tokenizer)", node: process.version, servers: [], jobs: [], scenarios: [] };
for (const f of opts.jobs) out.jobs.push(await runJob(f, opts));
for (const s of servers) out.servers.push(await measureServer(s, opts));
for (const f of opts.scenarios) out.scenarios.push(await runScenario(f, opts));

// limitsOf returns a scenario's limits. Each limit caps one of our counts
// per turn ("ours": "defs" or "list") at "ratio" times a server's count
// measured in this run ("of", "theirs": its "defs" or "list", by default
// the same count as ours) or at a fixed "max". "gate": true makes --check
// fail when a turn is over it; other limits are targets, reported only.
// The older form "max_ratio": {"of", "ratio"} is a gate on both counts.
function limitsOf(sc) {
  const { limits, max_ratio } = sc.spec;
  const ls = [...(limits ?? [])];
  if (max_ratio) {
    for (const c of ["defs", "list"]) ls.push({ name: `${max_ratio.ratio} of ${max_ratio.of}`, of: max_ratio.of, ratio: max_ratio.ratio, ours: c, gate: true });
  }
  return ls;
}

let failed = false;
for (const j of out.jobs) {
  for (const c of j.checks) {
    if (c.gate && !c.ok) {
      failed = true;
      console.error(`tokens: ${j.file}: ${c.run}: ${c.what}: not met${c.detail ? ` (${c.detail})` : ""}`);
    }
  }
  for (const r of j.runs) if (!r.done) console.error(`tokens: ${j.file}: ${r.label}: the job was not done: ${r.failures.join("; ")}`);
}
for (const sc of out.scenarios) {
  if (!sc.succeeded) {
    failed = true;
    console.error(`tokens: ${sc.file}: the job did not succeed: ${sc.failures.join("; ")}`);
  }
  sc.limits = [];
  for (const l of limitsOf(sc)) {
    let max = l.max;
    if (l.of) {
      const ref = out.servers.find((s) => s.name === l.of);
      if (!ref) {
        if (opts.check) throw new Error(`${sc.file}: a limit names ${l.of}, which was not measured`);
        continue;
      }
      max = ref[l.theirs ?? l.ours] * l.ratio;
    }
    const lim = { name: l.name, ours: l.ours, max, gate: !!l.gate, met: 0, turns: sc.turns.length };
    for (const t of sc.turns) {
      const ok = t[l.ours] <= max;
      (t.limits ??= []).push(ok);
      if (ok) lim.met++;
      else if (lim.gate) failed = true;
    }
    sc.limits.push(lim);
  }
}

const n = (x) => x.toLocaleString("en-US", { maximumFractionDigits: 0 });
if (opts.json) {
  console.log(JSON.stringify(out, null, 2));
} else {
  console.log(`Tokenizer: ${out.tokenizer}; node ${out.node}\n`);
  if (out.jobs.length) {
    printJobs(out.jobs);
    console.log("\n## Tool lists per turn\n");
  }
  console.log("| Server | Tools | name+description+inputSchema | whole tools/list |");
  console.log("|---|---:|---:|---:|");
  for (const s of out.servers) console.log(`| ${s.name} (${s.package}) | ${s.tools} | ${n(s.defs)} | ${n(s.list)} |`);
  for (const sc of out.scenarios) {
    console.log(`\n${sc.name}\n`);
    console.log(`Job succeeded: ${sc.succeeded ? "yes" : "**no** (" + sc.failures.join("; ") + ")"}.`);
    for (const l of sc.limits) console.log(`${l.gate ? "Gate" : "Target"} "${l.name}": ${l.ours} <= ${n(l.max)} on ${l.met} of ${l.turns} turns.`);
    const heads = sc.limits.map((l) => `${l.ours} <= ${n(l.max)}`);
    console.log(`\n| Turn | Call | Tools listed | name+description+inputSchema | whole tools/list | call result |${heads.map((h) => ` ${h} |`).join("")}`);
    console.log(`|---:|---|---|---:|---:|---:|${heads.map(() => "---|").join("")}`);
    for (const t of sc.turns) {
      const cells = (t.limits ?? []).map((ok) => (ok ? " yes |" : " **no** |")).join("");
      console.log(`| ${t.turn} | ${t.call ?? "(start)"} | ${t.tools}: ${t.names.join(", ")} | ${n(t.defs)} | ${n(t.list)} | ${t.result ? n(t.result.tokens) + (t.result.asked ? ` (asked the user ${t.result.asked})` : "") : "-"} |${cells}`);
    }
  }
}
if (opts.check && failed) {
  console.error("tokens: a job failed or a turn exceeds a gate");
  process.exit(1);
}
process.exit(0);
