// Tests of the harness's honesty check and counts (node --test; run by
// scripts/checks/tokens.sh).
import { test } from "node:test";
import assert from "node:assert/strict";
import { unshown, unescapeJSON, resultTokens, resultTextTokens, serveDir, root } from "./lib.mjs";
import { join } from "node:path";

const seen = [
  "The project is in /tmp/tokens-ab12. Find the .go files that mention widget.",
  JSON.stringify([{ name: "search_files", inputSchema: { properties: { path: {}, pattern: {} } } }, { name: "edit_file", inputSchema: { properties: { path: {}, edits: { type: "array" } } } }]),
  "/tmp/tokens-ab12/src/util.go",
  unescapeJSON('{"content":"// widget helper\\nfunc helper() {}"}'),
].join("\n");

test("a call made of what the model read passes", () => {
  assert.deepEqual(unshown("search_files", { path: "/tmp/tokens-ab12", pattern: "**/*.go" }, seen), []);
  assert.deepEqual(unshown("edit_file", { path: "/tmp/tokens-ab12/src/util.go", edits: [] }, seen), []);
});

test("a tool, parameter or value no answer showed is refused", () => {
  assert.match(unshown("move_file", {}, seen).join(), /the tool move_file was not shown/);
  assert.match(unshown("edit_file", { path: "/tmp/tokens-ab12/src/util.go", edits: [{ oldText: "x" }] }, seen).join(), /the parameter oldText/);
  assert.match(unshown("search_files", { path: "/tmp/tokens-ab12/secret" }, seen).join(), /"secret"/);
  assert.match(unshown("search_files", { path: "/tmp/other" }, seen).join(), /was not shown/);
});

test("text an answer printed as JSON is read unescaped", () => {
  assert.deepEqual(unshown("edit_file", { path: "/tmp/tokens-ab12/src/util.go", edits: ["// widget helper\nfunc helper() {}"] }, seen), []);
});

test("text only leaves structuredContent out", () => {
  const r = { content: [{ type: "text", text: "hello world" }], structuredContent: { content: "hello world" } };
  assert.equal(resultTextTokens(r), 2);
  assert.ok(resultTokens(r) > resultTextTokens(r));
});

test("serveDir serves a page inside its layout, as testapp.Serve does", async () => {
  const app = await serveDir(join(root, "domains/browser/testdata/jobs/docs"));
  try {
    const body = await (await fetch(app.url + "/faq.html")).text();
    assert.ok(body.startsWith("<!doctype html>\n"));
    assert.match(body, /<title>FAQ - Relay docs<\/title>\n<link/);
    assert.equal(body.split("aria-current").length, 2);
    assert.match(body, /<li><a href="faq.html" aria-current="page">FAQ<\/a><\/li>/);
    assert.match(body, /<\/nav>\n<main>\n {2}<h1>FAQ<\/h1>/);
    assert.match(body, /<\/main>\n<footer>/);
    assert.equal((await fetch(app.url + "/style.css")).status, 200);
  } finally {
    app.close();
  }
});
