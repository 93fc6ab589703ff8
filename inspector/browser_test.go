package inspector_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/manglecp/manglecp/internal/testenv"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "copy the README screenshot to docs/inspector.png")

// browserSession drives the inspector page in headless Chromium.
type browserSession struct {
	t   *testing.T
	ctx context.Context
	dir string
	n   int
}

// newBrowser starts headless Chromium (found with testenv.LookPath, so
// scripts/test.sh fails when it is missing) and returns a driver whose
// screenshots go to a temporary directory, or to
// $INSPECTOR_SCREENSHOTS when set.
func newBrowser(t *testing.T) *browserSession {
	t.Helper()
	exe := testenv.LookPath(t, "chromium", "chromium-browser")
	dir := os.Getenv("INSPECTOR_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // tests run as root in CI containers
		chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(1440, 1000),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	// Reduced motion: the page scrolls at once, so clicks land where the
	// element is.
	_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-reduced-motion", Value: "reduce"}},
	})
	if err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	t.Logf("screenshots in %s", dir)
	return &browserSession{t: t, ctx: ctx, dir: dir}
}

// do runs actions and fails the test with what on error.
func (b *browserSession) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 45*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		if buf, serr := chromedp.Run(b.ctx, chromedp.FullScreenshot(100)); serr == nil {
			b.t.Logf("the page when %q failed: %s", what, b.save("failed", buf))
		}
		b.t.Fatalf("%s: %v", what, err)
	}
	b.noBanner(what)
}

// noBanner fails when the page shows its error banner (a JavaScript
// error, a CSP violation or a failed API call).
func (b *browserSession) noBanner(what string) {
	b.t.Helper()
	msg, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(() => { const el = document.getElementById('banner'); return el.hidden ? '' : el.textContent; })()`))
	if err != nil {
		b.t.Fatalf("%s: reading the banner: %v", what, err)
	}
	if msg != "" {
		b.t.Fatalf("%s: the page reports: %s", what, msg)
	}
}

// eval evaluates a JavaScript expression returning T.
func eval[T any](b *browserSession, what, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// setValue sets a form control's value and fires its change event, as a
// user picking an option does.
func setValue(sel, value string) chromedp.Action[chromedp.Void] {
	q, _ := json.Marshal(sel)
	v, _ := json.Marshal(value)
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const el = document.querySelector(%s);
		if (!el) throw new Error('no element ' + %s);
		el.value = %s;
		el.dispatchEvent(new Event('input', {bubbles: true}));
		el.dispatchEvent(new Event('change', {bubbles: true}));
	})()`, q, q, v))
}

// click clicks the element sel (scrolled into view first).
func click(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Click(chromedp.CSS(sel))
}

// waitFor waits until sel is visible.
func waitFor(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(sel))
}

// settle waits until the page is still: its fonts loaded, no animation
// or transition running, then two frames painted (scrolling is instant:
// the session prefers reduced motion). An animation that never ends
// gives up after 300 frames rather than hang.
func settle() chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`document.fonts.ready.then(() => new Promise(resolve => {
		let frames = 0;
		const still = () => !document.getAnimations().some(a => a.playState === 'running');
		const next = () => requestAnimationFrame(() => {
			if (still() || ++frames > 300) requestAnimationFrame(() => requestAnimationFrame(() => resolve()));
			else next();
		});
		next();
	}))`, chromedp.EvalAwaitPromise)
}

// shot saves a full-page screenshot named after the state and returns its
// path.
func (b *browserSession) shot(name string) string {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, settle()); err != nil {
		b.t.Fatalf("screenshot %s: settling: %v", name, err)
	}
	buf, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	return b.save(name, buf)
}

// viewportShot saves a screenshot of the viewport.
func (b *browserSession) viewportShot(name string) string {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, settle()); err != nil {
		b.t.Fatalf("screenshot %s: settling: %v", name, err)
	}
	buf, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	return b.save(name, buf)
}

func (b *browserSession) save(name string, buf []byte) string {
	b.t.Helper()
	b.n++
	path := filepath.Join(b.dir, fmt.Sprintf("%02d-%s.png", b.n, name))
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		b.t.Fatal(err)
	}
	return path
}

// addFact fills the facts editor's form for pred with args and adds it.
func (b *browserSession) addFact(pred string, args ...string) {
	b.t.Helper()
	acts := []chromedp.Action[chromedp.Void]{setValue("#fact-pred", pred)}
	for i, a := range args {
		acts = append(acts, chromedp.SendKeys(chromedp.CSS(fmt.Sprintf("#fact-arg-%d", i)), a))
	}
	acts = append(acts, click("#fact-add"))
	b.do("add fact "+pred, acts...)
	if e := eval[string](b, "fact error", `document.getElementById('fact-error').textContent`); e != "" {
		b.t.Fatalf("add fact %s: the form says %q", pred, e)
	}
}

// TestBrowser drives the page in real headless Chromium: load it, fill
// facts (form and JSON import), evaluate, expand a proof tree, read rule
// coverage, invoke a tool through its confirmation step, apply a state
// delta, see error envelopes rendered, and export the history as a script.
// Each state is saved as a screenshot.
func TestBrowser(t *testing.T) {
	b := newBrowser(t)
	f := newFixture(t, nil)
	url := f.http.URL + "/#token=" + f.in.Token()

	// Load the page: the manifest at a glance.
	b.do("load", chromedp.Navigate(url), waitFor(`body[data-ready="1"]`), waitFor(`#intent-list li[data-intent="diagnose_error"]`))
	if got := eval[string](b, "server line", `document.getElementById('server-line').textContent`); !strings.Contains(got, "browser_diagnostics") || !strings.Contains(got, "ready") {
		t.Errorf("server line = %q, want the domain and status", got)
	}
	if n := eval[int](b, "profile rows", `document.querySelectorAll('.profile tbody tr').length`); n < 5 {
		t.Errorf("facts profile shows %d predicates", n)
	}
	b.shot("loaded")

	// Fill facts: two by JSON import, two with the generated forms.
	b.do("import facts",
		click("#facts-json-box summary"),
		setValue("#facts-json", `[{"pred":"net_request","args":["s1","r42","GET","https://api.example.com/users",1771510199000]},
			{"pred":"net_response","args":["s1","r42",404,1771510199500]}]`),
		click("#facts-import"))
	b.addFact("current_url", "https://app.example.com/dashboard")
	b.addFact("console_event", "s1", "error", "TypeError: Cannot read properties of null", "1771510200000")
	if n := eval[int](b, "fact rows", `document.querySelectorAll('#fact-list .fact-row').length`); n != 4 {
		t.Fatalf("fact list has %d facts, want 4", n)
	}
	if got := eval[string](b, "fact text", `document.querySelector('#fact-list .fact-row[data-pred="console_event"] .ftext').textContent`); !strings.Contains(got, `1771510200000`) {
		t.Errorf("console_event shown as %q: the number argument was not kept", got)
	}

	// A temporal annotation from the form, exported as JSON, then removed.
	b.do("temporal fact",
		setValue("#fact-pred", "console_event"),
		chromedp.SendKeys(chromedp.CSS("#fact-arg-0"), "s2"),
		chromedp.SendKeys(chromedp.CSS("#fact-arg-1"), "warning"),
		chromedp.SendKeys(chromedp.CSS("#fact-arg-2"), "slow"),
		chromedp.SendKeys(chromedp.CSS("#fact-arg-3"), "1771510100000"),
		setValue("#fact-t-kind", "interval"),
		chromedp.SendKeys(chromedp.CSS("#fact-t-start"), "2026-02-19T14:00:00Z"),
		chromedp.SendKeys(chromedp.CSS("#fact-t-end"), "_"),
		click("#fact-add"),
		click("#facts-export"))
	exported := eval[string](b, "export", `document.getElementById('facts-json').value`)
	var facts []map[string]any
	if err := json.Unmarshal([]byte(exported), &facts); err != nil || len(facts) != 5 {
		t.Fatalf("exported facts (%v): %s", err, exported)
	}
	if tt, _ := facts[4]["t"].(map[string]any); tt["start"] != "2026-02-19T14:00:00Z" || tt["end"] != "_" {
		t.Errorf("temporal annotation exported as %v", facts[4]["t"])
	}
	if got := eval[string](b, "temporal text", `document.querySelector('#fact-list .fact-row:last-child .ftext').textContent`); !strings.Contains(got, `@ ["2026-02-19T14:00:00Z", "_"]`) {
		t.Errorf("temporal fact shown as %q", got)
	}
	b.do("remove fact", click("#fact-list .fact-row:last-child button.danger"))
	if n := eval[int](b, "fact rows", `document.querySelectorAll('#fact-list .fact-row').length`); n != 4 {
		t.Fatalf("fact list has %d facts after removing one, want 4", n)
	}

	// Evaluate with options: full disclosure, proof hints and coverage.
	b.do("evaluate",
		setValue("#eval-intent", "diagnose_error"),
		setValue("#eval-time", "2026-02-19T14:30:05Z"),
		setValue("#eval-disclosure", "full"),
		click("#eval-go"),
		waitFor(`.group[data-level="full"] .card[data-tool="write_diagnosis_report"]`),
		waitFor(`#coverage-map .cell`))
	if n := eval[int](b, "cards", `document.querySelectorAll('.card').length`); n != 3 {
		t.Errorf("%d macro-tool cards, want 3", n)
	}
	b.shot("evaluated")

	// Expand a proof tree: facts at the leaves, rules at the nodes.
	b.do("open proof", click(`.card[data-tool="diagnose_causal_chain"] .btn-proof`), waitFor("#proof-tree li.rule"))
	leaves := eval[int](b, "leaves", `document.querySelectorAll('#proof-tree li.fact').length`)
	rules := eval[int](b, "rules", `document.querySelectorAll('#proof-tree li.rule').length`)
	if leaves == 0 || rules == 0 {
		t.Fatalf("proof tree has %d fact leaves and %d rule nodes", leaves, rules)
	}
	if n := eval[int](b, "inner facts", `document.querySelectorAll('#proof-tree li.fact > ul').length`); n != 0 {
		t.Errorf("%d fact nodes have children: facts must be leaves", n)
	}
	b.do("collapse all", click("#proof-collapse"))
	collapsed := eval[int](b, "collapsed", `document.querySelectorAll('#proof-tree li.collapsed').length`)
	if collapsed == 0 {
		t.Fatal("no collapsed node to expand")
	}
	id := eval[string](b, "first collapsed", `document.querySelector('#proof-tree li.collapsed').dataset.id`)
	b.do("expand node", click(fmt.Sprintf(`#proof-tree li[data-id="%s"] > .node-box > .toggle`, id)))
	if eval[bool](b, "still collapsed", fmt.Sprintf(`document.querySelector('#proof-tree li[data-id="%s"]').classList.contains('collapsed')`, id)) {
		t.Error("the node did not expand")
	}
	b.do("expand all", click("#proof-expand"))
	if n := eval[int](b, "collapsed after expand all", `document.querySelectorAll('#proof-tree li.collapsed').length`); n != 0 {
		t.Errorf("%d nodes still collapsed after Expand all", n)
	}
	b.shot("proof")

	// Invoke with confirmation: the confirmation step comes first; sending
	// without confirmation shows the server's refusal as an error envelope.
	b.do("open invoke", click(`.card[data-tool="write_diagnosis_report"] .btn-invoke`), waitFor("#invoke-form"))
	if v := eval[string](b, "enum", `document.getElementById('arg-request_id').selectedOptions[0].textContent`); v != "r42" {
		t.Errorf("request_id select shows %q, want r42 from the enum", v)
	}
	b.do("to confirmation", click("#invoke-go"), waitFor("#confirm-step"))
	if s := eval[string](b, "step", `document.querySelector('#invoke-steps li.active').textContent`); s != "Confirm" {
		t.Errorf("active step %q, want Confirm", s)
	}
	b.do("send unconfirmed", click("#confirm-skip"), waitFor(`.error-view[data-code="confirmation_required"]`), waitFor("#confirm-step"))
	errText := eval[string](b, "refusal", `document.querySelector('.error-view[data-code="confirmation_required"]').textContent`)
	for _, want := range []string{"confirmation_required", "HTTP 403", "invocation", "recoverable", "macro_id"} {
		if !strings.Contains(errText, want) {
			t.Errorf("the refusal does not show %q: %s", want, errText)
		}
	}
	b.shot("confirm")
	b.do("confirm", click("#confirm-go"), waitFor("#invoke-ok"))
	if got := eval[string](b, "result", `document.getElementById('invoke-ok').textContent`); !strings.Contains(got, "confirmed") {
		t.Errorf("invoke result %q is not marked confirmed", got)
	}
	if entries, _ := os.ReadDir(f.reports); len(entries) != 1 {
		t.Errorf("report directory has %d files after the confirmed invocation, want 1", len(entries))
	}
	b.shot("invoked")

	// Invoke diagnose_causal_chain and apply its state delta to the facts.
	b.do("invoke chain", click(`.card[data-tool="diagnose_causal_chain"] .btn-invoke`), waitFor("#invoke-form"),
		click("#invoke-go"), waitFor("#delta-table"), click("#delta-apply"), waitFor(`#fact-list .fact-row[data-pred="diagnosed_error"]`))
	if got := eval[string](b, "delta note", `document.getElementById('delta-note').textContent`); !strings.Contains(got, "1 asserted") {
		t.Errorf("delta note %q", got)
	}
	b.shot("delta-applied")

	// A token budget: the server demotes tools, and the cards fall into
	// one column per disclosure level. The output-only fact the delta
	// asserted stays in the editor but is not sent.
	b.do("budget",
		setValue("#eval-disclosure", "adaptive"),
		setValue("#eval-budget", "600"),
		click("#eval-go"),
		waitFor(`.group[data-level="minimal"] .card`))
	levels := eval[string](b, "levels", `Array.from(document.querySelectorAll('.group')).map(g => g.dataset.level).join(',')`)
	if levels != "full,condensed,minimal" {
		t.Errorf("disclosure groups %q, want full,condensed,minimal", levels)
	}
	if got := eval[string](b, "notes", `document.getElementById('results-notes').textContent`); !strings.Contains(got, "not sent (output-only predicate): diagnosed_error") {
		t.Errorf("notes %q do not say the output-only fact was kept out", got)
	}
	b.shot("disclosure-levels")

	// At minimal disclosure the tool carries no safety metadata and no
	// input_schema: the arguments are typed as JSON, and the server's
	// confirmation_required answer leads to the confirmation step.
	b.do("invoke minimal",
		click(`.group[data-level="minimal"] .card[data-tool="write_diagnosis_report"] .btn-invoke`),
		waitFor("#invoke-raw"),
		setValue("#invoke-raw", `{"request_id": "r42"}`),
		click("#invoke-go"),
		waitFor(`#invoke-confirm .error-view[data-code="confirmation_required"]`),
		waitFor("#confirm-step"),
		click("#confirm-go"),
		waitFor("#invoke-ok"))
	if s := eval[string](b, "step", `document.querySelector('#invoke-steps li.done:nth-child(2)') ? 'Confirm' : document.getElementById('invoke-steps').textContent`); s != "Confirm" {
		t.Errorf("the steps do not show the confirmation: %q", s)
	}
	b.do("budget off", setValue("#eval-budget", ""), setValue("#eval-disclosure", "full"))

	// An error envelope: a fact with a wrong arity, found by the client
	// before sending, rendered with its registry entry and violations.
	b.do("bad fact",
		setValue("#facts-json", `[{"pred":"current_url","args":["https://a.example", "extra"]}]`),
		click("#facts-import"),
		click("#eval-go"),
		waitFor(`#eval-error .error-view[data-code="arity_mismatch"]`))
	errText = eval[string](b, "arity error", `document.querySelector('#eval-error .error-view').textContent`)
	for _, want := range []string{"arity_mismatch", "HTTP 400", "fact_validation", "Registry:", "current_url", "found by the client"} {
		if !strings.Contains(errText, want) {
			t.Errorf("the error view does not show %q: %s", want, errText)
		}
	}
	if n := eval[int](b, "violations", `document.querySelectorAll('#eval-error .violations tbody tr').length`); n != 1 {
		t.Errorf("%d violation rows, want 1", n)
	}
	b.shot("error")

	// History, exported as a replayable script.
	b.do("export", click("#export-curl"), waitFor("#script-out"))
	script := eval[string](b, "script", `document.getElementById('script-out').textContent`)
	if !strings.Contains(script, "curl") || !strings.Contains(script, "diagnose_error") || !strings.Contains(script, "CONFIRMATION_TOKEN") {
		t.Errorf("exported script lacks the session's requests:\n%s", script)
	}
	if n := eval[int](b, "history rows", `document.querySelectorAll('#history-table tbody tr[data-id]').length`); n < 5 {
		t.Errorf("history shows %d requests, want at least 5", n)
	}
	b.shot("history")

	// The README screenshot: a fresh page, the example facts evaluated,
	// the first tool's proof tree open; the viewport only.
	b.do("readme: reload", chromedp.Navigate("about:blank"), chromedp.Navigate(url), waitFor(`body[data-ready="1"]`))
	b.do("readme: facts",
		click("#facts-json-box summary"),
		setValue("#facts-json", `[{"pred":"current_url","args":["https://app.example.com/dashboard"]},
			{"pred":"console_event","args":["s1","error","TypeError: Cannot read properties of null",1771510200000]},
			{"pred":"net_request","args":["s1","r42","GET","https://api.example.com/users",1771510199000]},
			{"pred":"net_response","args":["s1","r42",404,1771510199500]}]`),
		click("#facts-import"),
		click("#facts-json-box summary"))
	b.do("readme: evaluate",
		setValue("#eval-intent", "diagnose_error"),
		setValue("#eval-time", "2026-02-19T14:30:05Z"),
		setValue("#eval-disclosure", "full"),
		click("#eval-go"),
		waitFor(`.card[data-tool="diagnose_causal_chain"]`))
	b.do("readme: proof",
		click(`.card[data-tool="diagnose_causal_chain"] .btn-proof`),
		waitFor("#proof-tree li.rule"))
	b.do("readme: viewport",
		chromedp.EmulateViewport(1440, 1560),
		chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	readme := b.viewportShot("readme")
	if *updateScreenshot {
		raw, err := os.ReadFile(readme)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("..", "docs", "inspector.png"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
