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
// structuredContent ("as sent"), and, beside it, every content item only
// ("text only": most hosts pass only that). The job's totals, both ways:
//
//	M1 (no cache):        the sum of the prompts.
//	M2 (Anthropic-style): the part identical to the previous turn's prompt
//	                      at 0.1x, the rest at 1.25x; tools come first, so
//	                      a changed tool list makes the whole prompt new.
//	M3 (OpenAI-style):    the identical prefix at 0.5x, the rest at 1x.
//
// Honest scripts: in a job that states its task ("task": what the user
// asks, ${tmp} and ${app} expanded), before each call the harness checks
// that the model could have written it (lib.mjs unshown): the tool's
// name, every parameter name and every string value occur in what the
// model read before (the task and the app's address, the tool list of
// that turn, every earlier call and answer). A call that uses anything
// else is refused, and the run is not done. A job without a task is not
// checked; the report says so.
//
// A run's job is done when its answers hold the expected facts
// (expect_facts), every call answered as expected (no isError unless
// expect_error) and the files are on disk as the job leaves them
// (expect_files), and the job's check_command (the project's tests, run
// in the job's directory) passes after it.
//
// Wall time: a run's wall time is the time from its first call to its
// last answer, as a host waits for it (the server's start and the first
// tools/list are excluded; the tools/list of each later turn is
// included, as it is small and the same for every server). With
// --repeat N every run of a job is played N times, interleaved (A B A B
// ...: each repetition plays every run once, in the job's order), and a
// run's wall time is the median of its N; its tokens are those of the
// first repetition, and a run whose totals differ between repetitions
// says so (tokens_varied). A run is done only when done in every
// repetition.

import { readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { root, tokens, count, defsOf, connect, listAll, resolveRefs, checkFiles, serveDir, resultTokens, resultTextTokens, unescapeJSON, unshown, packageVersion } from "./lib.mjs";

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
  let waiters = [];
  let asked = [];
  const onListChanged = () => {
    changed++;
    for (const w of waiters) w();
    waiters = [];
  };
  // listChangedSince waits (at most 5 s) until a tools/list_changed
  // arrived after the count was before.
  const listChangedSince = (before) =>
    changed !== before
      ? Promise.resolve()
      : new Promise((resolve) => {
          const timer = setTimeout(resolve, 5000);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
  const hooks = { onListChanged, tree: job.tree };
  const elicitation = run.elicitation ?? job.elicitation;
  if (elicitation) {
    hooks.onElicit = async (req) => {
      asked.push(req.params.message);
      return elicitation === "accept" ? { action: "accept", content: {} } : { action: elicitation };
    };
  }
  const failures = [];
  let seen = ""; // what the model read so far
  const turns = []; // model turns: the tool list seen
  const calls = []; // the calls made
  const results = [];
  const texts = [];
  let answers = "";
  let client;
  let start = NaN;
  let end = NaN;
  const look = async () => {
    const tools = await listAll(client);
    return { ...count(tools), toolsKey: JSON.stringify(defsOf(tools)) };
  };
  try {
    client = await connect(run.server, opts, hooks);
    tmp = client.tmp;
    // The task (else the description) and the app's address, which the
    // user gives the model with the task.
    seen = withApp({ task: job.task ?? "" }).task + (app ? `\n${app.url}/` : "");
    turns.push(await look());
    for (const [i, step] of (run.calls ?? []).entries()) {
      const before = changed;
      asked = [];
      const args = resolveRefs(withApp(step.arguments), results, texts);
      const why = job.task === undefined ? [] : unshown(step.name, args, seen + "\n" + turns[turns.length - 1].toolsKey);
      if (why.length > 0) {
        failures.push(`call ${i + 1} (${step.name}) refused: no earlier answer showed what it uses: ${why.join("; ")}`);
        break;
      }
      if (i === 0) start = performance.now();
      const r = await client.callTool({ name: step.name, arguments: args }, undefined, { timeout: 120000 });
      end = performance.now();
      results[i] = r.structuredContent ?? null;
      texts[i] = (r.content ?? []).map((c) => c.text ?? JSON.stringify(c)).join("\n");
      answers += texts[i] + "\n" + JSON.stringify(r.structuredContent ?? null) + "\n";
      seen += "\n" + JSON.stringify({ name: step.name, arguments: args }) + "\n" + texts[i] + "\n" + unescapeJSON(texts[i]);
      if (!!r.isError !== !!step.expect_error) {
        failures.push(`call ${i + 1} (${step.name}): ${r.isError ? "failed" : "did not fail"}: ${texts[i].slice(0, 400)}`);
      }
      calls.push({
        name: step.name,
        arguments: args,
        call: tokens(JSON.stringify({ name: step.name, arguments: args })),
        result: resultTokens(r),
        resultText: resultTextTokens(r),
        isError: !!r.isError,
        asked: asked.slice(),
        text: texts[i],
      });
      // A host that follows tools/list_changed lists again when told.
      if (step.expect_list_changed) {
        await listChangedSince(before);
        if (changed === before) failures.push(`call ${i + 1} (${step.name}): no tools/list_changed`);
      }
      turns.push(await look());
    }
    for (const f of (run.expect_facts ?? []).map((w) => withApp(w))) {
      if (!answers.includes(f)) failures.push(`no answer holds ${JSON.stringify(f)}`);
    }
    failures.push(...checkFiles(client.tmp, run.expect_files ?? job.expect_files));
    // The project's own check after the job (its tests), in ${tmp}.
    const check = run.check_command ?? job.check_command;
    if (check && failures.length === 0) {
      const r = spawnSync(check[0], check.slice(1), { cwd: client.tmp, encoding: "utf8", timeout: 300000, env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" } });
      if (r.status !== 0) failures.push(`${check.join(" ")} failed after the job: ${(r.stderr || r.stdout || String(r.error)).slice(-400)}`);
    }
  } catch (e) {
    failures.push(`the run broke: ${e.message}`);
  } finally {
    if (client) {
      await client.close().catch(() => {});
      rmSync(client.tmp, { recursive: true, force: true });
    }
  }
  const complete = turns.length === calls.length + 1;
  const none = { prompts: [], totals: { M1: NaN, M2: NaN, M3: NaN } };
  const { prompts, totals } = complete ? costs(turns, calls, job.system_tokens ?? 500) : none;
  const text = complete ? costs(turns, calls.map((c) => ({ call: c.call, result: c.resultText })), job.system_tokens ?? 500) : none;
  for (const t of turns) delete t.toolsKey;
  return {
    label: label(run),
    anchor: !!run.anchor,
    turns,
    calls,
    prompts,
    totals,
    totalsText: text.totals,
    results: calls.reduce((s, c) => s + c.result, 0),
    resultsText: calls.reduce((s, c) => s + c.resultText, 0),
    wall: (end - start) / 1000,
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

// median is the median of the finite numbers of xs (NaN if none).
export function median(xs) {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// merge makes one run's result of its repetitions (reps[0] the first):
// the first's tokens, the median wall time of all, done only when every
// repetition was done, and the totals of any repetition that differed.
export function merge(reps) {
  const r = { ...reps[0] };
  r.walls = reps.map((x) => x.wall);
  r.wall = median(r.walls);
  r.repeat = reps.length;
  r.done = reps.every((x) => x.done);
  r.failures = reps.flatMap((x, k) => x.failures.map((f) => (reps.length > 1 ? `repetition ${k + 1}: ${f}` : f)));
  const key = (x) => JSON.stringify([x.totals, x.totalsText]);
  const varied = reps.filter((x) => key(x) !== key(reps[0]));
  if (varied.length) r.tokens_varied = reps.map((x) => x.totals);
  return r;
}

// runJob plays every run of a job file (opts.repeat times, interleaved)
// and compares each with the job's anchor: the ratios of the totals and
// of the median wall times, and the gates (fail) and targets (reported)
// on them and on the tool list of every turn. A job may have only an
// anchor run; "manglecp_todo" and other unknown keys are ignored.
export async function runJob(file, opts) {
  const job = JSON.parse(readFileSync(file, "utf8"));
  const repeat = Math.max(1, opts.repeat ?? 1);
  const app = job.app ? await serveDir(join(root, job.app.dir)) : null;
  const reps = job.runs.map(() => []);
  try {
    for (let k = 0; k < repeat; k++) {
      for (const [i, run] of job.runs.entries()) reps[i].push(await runOne(run, job, opts, app));
    }
  } finally {
    if (app) app.close();
  }
  const runs = reps.map(merge);
  const anchor = runs.find((r) => r.anchor);
  const checks = [];
  for (const [i, run] of runs.entries()) {
    const spec = job.runs[i];
    if (!anchor || run.anchor) continue;
    run.ratios = {};
    run.ratiosText = {};
    for (const m of Object.keys(models)) {
      run.ratios[m] = run.totals[m] / anchor.totals[m];
      run.ratiosText[m] = run.totalsText[m] / anchor.totalsText[m];
    }
    run.ratios.wall = run.wall / anchor.wall;
    // gates and targets: the totals as sent; gates_text and targets_text:
    // text content only, both against the anchor counted the same way.
    for (const [kind, gate, text] of [["gates", true, false], ["targets", false, false], ["gates_text", true, true], ["targets_text", false, true]]) {
      const g = spec[kind] ?? {};
      const ratios = text ? run.ratiosText : run.ratios;
      for (const m of Object.keys(models)) {
        if (g[m] === undefined) continue;
        checks.push({ run: run.label, what: `${m} <= ${g[m]}x ${anchor.label}${text ? " (text only)" : ""}`, gate, ok: ratios[m] <= g[m] });
      }
      if (g.wall !== undefined) {
        // The median wall time against the anchor's (issue 28: at most Playwright MCP's).
        checks.push({ run: run.label, what: `wall time (median of ${run.repeat}) <= ${g.wall}x ${anchor.label}`, gate, ok: run.ratios.wall <= g.wall, detail: `${secs(run.wall)} s against ${secs(anchor.wall)} s` });
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
  for (const run of runs) {
    if (run.repeat > 1) checks.push({ run: run.label, what: `the same tokens in all ${run.repeat} repetitions`, gate: false, ok: !run.tokens_varied, detail: run.tokens_varied ? run.tokens_varied.map((t) => `${t.M1}/${t.M2}/${t.M3}`).join(", ") : undefined });
  }
  if (job.task === undefined) checks.push({ run: "(all runs)", what: "scripted calls checked against what earlier answers showed (the job states no task)", gate: false, ok: false });
  return { file, name: job.name, runs, checks };
}

const n = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "-");
const secs = (x) => (Number.isFinite(x) ? x.toFixed(2) : "-");

// printJobs writes the whole-job table of every job, then each run turn by
// turn.
export function printJobs(jobs) {
  console.log("## Whole jobs\n");
  const repeat = Math.max(1, ...jobs.flatMap((j) => j.runs.map((r) => r.repeat ?? 1)));
  console.log(`| job | server | calls | results | no cache (M1) | Anthropic-style cache (M2) | OpenAI-style cache (M3) | wall s${repeat > 1 ? ` (median of ${repeat})` : ""} | done |`);
  console.log("|---|---|---:|---:|---:|---:|---:|---:|---|");
  for (const j of jobs) {
    for (const r of j.runs) {
      const x = (m) => (m === "wall" ? secs(r.wall) : n(r.totals[m])) + (r.ratios && Number.isFinite(r.ratios[m]) ? ` (${r.ratios[m].toFixed(2)}x)` : "");
      console.log(`| ${j.name} | ${r.label} | ${r.calls.length} | ${n(r.results)} | ${x("M1")} | ${x("M2")} | ${x("M3")} | ${x("wall")} | ${r.done ? "yes" : "**no**"} |`);
    }
  }
  console.log("\nCounting text content only (no structuredContent), as most hosts pass answers:\n");
  console.log("| job | server | calls | results (text) | no cache (M1) | Anthropic-style cache (M2) | OpenAI-style cache (M3) | done |");
  console.log("|---|---|---:|---:|---:|---:|---:|---|");
  for (const j of jobs) {
    for (const r of j.runs) {
      const x = (m) => n(r.totalsText?.[m]) + (r.ratiosText && Number.isFinite(r.ratiosText[m]) ? ` (${r.ratiosText[m].toFixed(2)}x)` : "");
      console.log(`| ${j.name} | ${r.label} | ${r.calls.length} | ${n(r.resultsText)} | ${x("M1")} | ${x("M2")} | ${x("M3")} | ${r.done ? "yes" : "**no**"} |`);
    }
  }
  for (const j of jobs) {
    console.log(`\n### ${j.name}\n`);
    for (const c of j.checks) console.log(`- ${c.gate ? "Gate" : "Target"} (${c.run}): ${c.what}: ${c.ok ? "met" : "**not met**"}${c.detail ? ` (${c.detail})` : ""}`);
    for (const r of j.runs) {
      console.log(`\n#### ${r.label}: ${r.done ? "done" : "**not done**: " + r.failures.join("; ")}\n`);
      console.log("| turn | tools listed | name+description+inputSchema | whole tools/list | prompt | call | arguments | call tokens | result tokens (text only) |");
      console.log("|---:|---|---:|---:|---:|---|---|---:|---:|");
      for (const [k, t] of r.turns.entries()) {
        const c = r.calls[k];
        const args = c ? "`" + JSON.stringify(c.arguments).replaceAll("|", "\\|").slice(0, 160) + "`" : "";
        const call = c ? c.name + (c.asked.length ? " (user asked)" : "") + (c.isError ? " (error)" : "") : "(final answer)";
        console.log(`| ${k} | ${t.tools}: ${t.names.join(", ")} | ${n(t.defs)} | ${n(t.list)} | ${n(r.prompts[k])} | ${call} | ${args} | ${c ? n(c.call) : "-"} | ${c ? `${n(c.result)} (${n(c.resultText)})` : "-"} |`);
      }
      console.log(`\nTotals: M1 ${n(r.totals.M1)}, M2 ${n(r.totals.M2)}, M3 ${n(r.totals.M3)}; text only M1 ${n(r.totalsText.M1)}, M2 ${n(r.totalsText.M2)}, M3 ${n(r.totalsText.M3)}. Wall time: ${secs(r.wall)} s${r.repeat > 1 ? ` (median of ${r.walls.map(secs).join(", ")})` : ""}.\n\nThe answers, as the model reads them (content text; structuredContent counted too):`);
      for (const [i, c] of r.calls.entries()) console.log(`\n${i + 1}. ${c.name} (${c.result} tokens):\n\n${c.text.slice(0, 3000).replace(/^/gm, "    ")}`);
    }
  }
}
