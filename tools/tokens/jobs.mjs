// Whole-job measurement: what a model pays over a whole job, not per turn.
//
// A job file (tools/tokens/jobs/*.json) names a job and the runs that do
// it: an anchor (another MCP server, for example Playwright MCP or the MCP
// filesystem server) and `manglecp mcp` in one or more configurations,
// each with the scripted calls a competent model would make. Every run is
// driven over MCP (the official TypeScript SDK client, stdio) in the same
// process run; the tool list is read before every model turn.
//
// The model's prompt at turn k (k = 0..N for N calls; turn N writes the
// final answer) is
//
//	system (500 tokens of system prompt and task) + the tool list it sees
//	(name+description+inputSchema) + every earlier call and result,
//
// in o200k_base tokens. A call is {name, arguments}; a result is counted
// as a host passes it to the model: every content item plus
// structuredContent. The job's totals:
//
//	M1 (no cache):        the sum of the prompts.
//	M2 (Anthropic-style): the part identical to the previous turn's prompt
//	                      at 0.1x, the rest at 1.25x; tools come first, so
//	                      a changed tool list makes the whole prompt new.
//	M3 (OpenAI-style):    the identical prefix at 0.5x, the rest at 1x.
//
// A run's job is done when its answers hold the expected facts
// (expect_facts), every call answered as expected (no isError unless
// expect_error) and the files are on disk as the job leaves them
// (expect_files).

import { readFileSync } from "node:fs";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { root, tokens, count, defsOf, connect, listAll, resolveRefs, checkFiles, serveDir, resultTokens, sleep, packageVersion } from "./lib.mjs";

// The cost models: the price of the prefix identical to the previous
// prompt, and of the rest. The first prompt is all "rest".
export const models = {
  M1: { cached: 1, fresh: 1 },
  M2: { cached: 0.1, fresh: 1.25 },
  M3: { cached: 0.5, fresh: 1 },
};

// costs returns the prompts of a run's model turns and its totals under
// each model. turns[k] = {toolsKey, defs} for every model turn k = 0..N
// and calls[j] = {call, result} tokens for j = 0..N-1.
export function costs(turns, calls, system = 500) {
  const prompts = [];
  let hist = 0;
  for (let k = 0; k < turns.length; k++) {
    if (k > 0) hist += calls[k - 1].call + calls[k - 1].result;
    prompts.push(system + turns[k].defs + hist);
  }
  const totals = {};
  for (const [m, p] of Object.entries(models)) {
    let sum = 0;
    for (let k = 0; k < prompts.length; k++) {
      const same = k > 0 && turns[k].toolsKey === turns[k - 1].toolsKey;
      const cached = same ? prompts[k - 1] : 0;
      sum += p.cached * cached + p.fresh * (prompts[k] - cached);
    }
    totals[m] = Math.round(sum);
  }
  return { prompts, totals };
}

// runOne drives one server through a run's calls.
async function runOne(run, job, opts, app) {
  let tmp = "${tmp}";
  const withApp = (v) => JSON.parse(JSON.stringify(v ?? {}).replaceAll("${app}", app ? app.url : "${app}").replaceAll("${tmp}", tmp));
  let changed = 0;
  let asked = [];
  const hooks = { onListChanged: () => { changed++; }, tree: job.tree };
  const elicitation = run.elicitation ?? job.elicitation;
  if (elicitation) {
    hooks.onElicit = async (req) => {
      asked.push(req.params.message);
      return elicitation === "accept" ? { action: "accept", content: {} } : { action: elicitation };
    };
  }
  const failures = [];
  const turns = []; // model turns: the tool list seen
  const calls = []; // the calls made
  const results = [];
  const texts = [];
  let answers = "";
  let client;
  const look = async () => {
    const tools = await listAll(client);
    return { ...count(tools), toolsKey: JSON.stringify(defsOf(tools)) };
  };
  try {
    client = await connect(run.server, opts, hooks);
    tmp = client.tmp;
    turns.push(await look());
    for (const [i, step] of (run.calls ?? []).entries()) {
      const before = changed;
      asked = [];
      const args = resolveRefs(withApp(step.arguments), results, texts);
      const r = await client.callTool({ name: step.name, arguments: args }, undefined, { timeout: 120000 });
      results[i] = r.structuredContent ?? null;
      texts[i] = (r.content ?? []).map((c) => c.text ?? JSON.stringify(c)).join("\n");
      answers += texts[i] + "\n" + JSON.stringify(r.structuredContent ?? null) + "\n";
      if (!!r.isError !== !!step.expect_error) {
        failures.push(`call ${i + 1} (${step.name}): ${r.isError ? "failed" : "did not fail"}: ${texts[i].slice(0, 400)}`);
      }
      calls.push({
        name: step.name,
        arguments: args,
        call: tokens(JSON.stringify({ name: step.name, arguments: args })),
        result: resultTokens(r),
        isError: !!r.isError,
        asked: asked.slice(),
        text: texts[i],
      });
      // A host that follows tools/list_changed lists again when told.
      if (step.expect_list_changed) {
        for (let w = 0; w < 200 && changed === before; w++) await sleep(25);
        if (changed === before) failures.push(`call ${i + 1} (${step.name}): no tools/list_changed`);
      }
      turns.push(await look());
    }
    for (const f of (run.expect_facts ?? []).map((w) => withApp(w))) {
      if (!answers.includes(f)) failures.push(`no answer holds ${JSON.stringify(f)}`);
    }
    failures.push(...checkFiles(client.tmp, run.expect_files ?? job.expect_files));
  } catch (e) {
    failures.push(`the run broke: ${e.message}`);
  } finally {
    if (client) {
      await client.close().catch(() => {});
      rmSync(client.tmp, { recursive: true, force: true });
    }
  }
  const { prompts, totals } = turns.length === calls.length + 1 ? costs(turns, calls, job.system_tokens ?? 500) : { prompts: [], totals: { M1: NaN, M2: NaN, M3: NaN } };
  for (const t of turns) delete t.toolsKey;
  return {
    label: label(run),
    anchor: !!run.anchor,
    turns,
    calls,
    prompts,
    totals,
    results: calls.reduce((s, c) => s + c.result, 0),
    done: failures.length === 0,
    failures,
  };
}

// label names a run: its label, with the npm package's version for an
// anchor.
function label(run) {
  if (run.package) return `${run.label} ${packageVersion(run.package)}`;
  return run.label;
}

// runJob plays every run of a job file and compares each with the job's
// anchor: the ratios of the totals, and the gates (fail) and targets
// (reported) on them and on the tool list of every turn.
export async function runJob(file, opts) {
  const job = JSON.parse(readFileSync(file, "utf8"));
  const app = job.app ? await serveDir(join(root, job.app.dir)) : null;
  const runs = [];
  try {
    for (const run of job.runs) runs.push(await runOne(run, job, opts, app));
  } finally {
    if (app) app.close();
  }
  const anchor = runs.find((r) => r.anchor);
  const checks = [];
  for (const [i, run] of runs.entries()) {
    const spec = job.runs[i];
    if (!anchor || run.anchor) continue;
    run.ratios = {};
    for (const m of Object.keys(models)) run.ratios[m] = run.totals[m] / anchor.totals[m];
    for (const [kind, gate] of [["gates", true], ["targets", false]]) {
      const g = spec[kind] ?? {};
      for (const m of Object.keys(models)) {
        if (g[m] === undefined) continue;
        checks.push({ run: run.label, what: `${m} <= ${g[m]}x ${anchor.label}`, gate, ok: run.ratios[m] <= g[m] });
      }
      if (g.defs !== undefined) {
        const max = anchor.turns[0].list * g.defs;
        const over = run.turns.filter((t) => t.defs > max).length;
        checks.push({ run: run.label, what: `tool definitions at every turn <= ${g.defs}x ${anchor.label}'s whole list (${Math.round(max)})`, gate, ok: over === 0, detail: `${run.turns.length - over} of ${run.turns.length} turns` });
      }
      if (g.max_tools !== undefined) {
        // The number of tools the model sees at every turn (issue 31: several upstreams behind one entry).
        const over = run.turns.filter((t) => t.tools > g.max_tools).length;
        checks.push({ run: run.label, what: `tools listed at every turn <= ${g.max_tools}`, gate, ok: over === 0, detail: `${run.turns.length - over} of ${run.turns.length} turns` });
      }
    }
    if (spec.gates?.done !== false) checks.push({ run: run.label, what: "job done", gate: true, ok: run.done });
  }
  if (anchor) checks.push({ run: anchor.label, what: "job done", gate: true, ok: anchor.done });
  return { file, name: job.name, runs, checks };
}

const n = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "-");

// printJobs writes the whole-job table of every job, then each run turn by
// turn.
export function printJobs(jobs) {
  console.log("## Whole jobs\n");
  console.log("| job | server | calls | results | no cache (M1) | Anthropic-style cache (M2) | OpenAI-style cache (M3) | done |");
  console.log("|---|---|---:|---:|---:|---:|---:|---|");
  for (const j of jobs) {
    for (const r of j.runs) {
      const x = (m) => n(r.totals[m]) + (r.ratios ? ` (${r.ratios[m].toFixed(2)}x)` : "");
      console.log(`| ${j.name} | ${r.label} | ${r.calls.length} | ${n(r.results)} | ${x("M1")} | ${x("M2")} | ${x("M3")} | ${r.done ? "yes" : "**no**"} |`);
    }
  }
  for (const j of jobs) {
    console.log(`\n### ${j.name}\n`);
    for (const c of j.checks) console.log(`- ${c.gate ? "Gate" : "Target"} (${c.run}): ${c.what}: ${c.ok ? "met" : "**not met**"}${c.detail ? ` (${c.detail})` : ""}`);
    for (const r of j.runs) {
      console.log(`\n#### ${r.label}: ${r.done ? "done" : "**not done**: " + r.failures.join("; ")}\n`);
      console.log("| turn | tools listed | name+description+inputSchema | whole tools/list | prompt | call | arguments | call tokens | result tokens |");
      console.log("|---:|---|---:|---:|---:|---|---|---:|---:|");
      for (const [k, t] of r.turns.entries()) {
        const c = r.calls[k];
        const args = c ? "`" + JSON.stringify(c.arguments).replaceAll("|", "\\|").slice(0, 160) + "`" : "";
        const call = c ? c.name + (c.asked.length ? " (user asked)" : "") + (c.isError ? " (error)" : "") : "(final answer)";
        console.log(`| ${k} | ${t.tools}: ${t.names.join(", ")} | ${n(t.defs)} | ${n(t.list)} | ${n(r.prompts[k])} | ${call} | ${args} | ${c ? n(c.call) : "-"} | ${c ? n(c.result) : "-"} |`);
      }
      console.log(`\nTotals: M1 ${n(r.totals.M1)}, M2 ${n(r.totals.M2)}, M3 ${n(r.totals.M3)}.\n\nThe answers, as the model reads them (content text; structuredContent counted too):`);
      for (const [i, c] of r.calls.entries()) console.log(`\n${i + 1}. ${c.name} (${c.result} tokens):\n\n${c.text.slice(0, 3000).replace(/^/gm, "    ")}`);
    }
  }
}
