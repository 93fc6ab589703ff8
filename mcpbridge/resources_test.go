package mcpbridge_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/protocol"
)

// builds builds manglecp for TestScreenshotOverStdio.
var builds testenv.Builds

func TestMain(m *testing.M) {
	code := m.Run()
	builds.Close()
	os.Exit(code)
}

// shot is a binary object as the browser domain returns a screenshot.
func shot(mediaType string, data []byte) map[string]any {
	return map[string]any{"media_type": mediaType, "encoding": "base64", "bytes": len(data), "data": base64.StdEncoding.EncodeToString(data)}
}

// fakePNG is n bytes that begin as a PNG does, different for each seed.
func fakePNG(n int, seed byte) []byte {
	b := make([]byte, n)
	copy(b, "\x89PNG\r\n\x1a\n")
	for i := 8; i < n; i++ {
		b[i] = byte(i*31) ^ seed
	}
	return b
}

// bigAnswers lets answers of tens of MiB through the bridge's bounds: the
// bounds of binary results are what these tests check.
var bigAnswers = &mcpbridge.Options{Limits: mcpbridge.Limits{MaxAnswerBytes: 128 << 20}}

// resultHarness is a bridge to a fake server whose trace_request answers
// its calls with results, one by one, for a host of MCP version.
func resultHarness(t *testing.T, version string, results ...map[string]any) *harness {
	t.Helper()
	fake := newFake()
	fake.setEvaluate(selects(tool("trace_request", false)))
	var mu sync.Mutex
	fake.setInvoke(func(context.Context, *protocol.InvokeRequest, func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error) {
		mu.Lock()
		defer mu.Unlock()
		if len(results) == 0 {
			return nil, protocol.Errorf(protocol.CodeInternalError, "no more results")
		}
		r := results[0]
		results = results[1:]
		return &protocol.InvokeResponse{Result: r, Observability: protocol.Observability{Summary: "Captured."}}, nil
	})
	h := newHarness(t, fake, bigAnswers, hostOptions{protocolVersion: version})
	if res := h.call(t, "diagnose", diagnoseArgs); res.IsError {
		t.Fatalf("diagnose: %s", text(res))
	}
	return h
}

// trace calls trace_request through invoke_macro_tool.
func trace(t *testing.T, h *harness) *mcp.CallToolResult {
	t.Helper()
	res := h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "trace_request", "arguments": map[string]any{"target": "x"}})
	if res.IsError {
		t.Fatalf("trace_request: %s", text(res))
	}
	return res
}

// links are the resource_link items of a result.
func links(res *mcp.CallToolResult) []*mcp.ResourceLink {
	var out []*mcp.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			out = append(out, l)
		}
	}
	return out
}

// readBlob reads a resource of cs: its one content's bytes and MIME type.
func readBlob(t *testing.T, cs *mcp.ClientSession, uri string) ([]byte, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, "", err
	}
	if len(r.Contents) != 1 || r.Contents[0].URI != uri {
		t.Fatalf("read %s: contents %+v", uri, r.Contents)
	}
	return r.Contents[0].Blob, r.Contents[0].MIMEType, nil
}

// notFound reports whether err is the SDK's resource-not-found error.
func notFound(err error) bool {
	var je *jsonrpc.Error
	return errors.As(err, &je) && je.Code == mcp.CodeResourceNotFound
}

// TestBinaryResultRendered: a binary object of a macro-tool's result,
// wherever it is within the walk's bounds, is kept as a resource and the
// answer shows its URI instead of base64, with a resource_link on MCP
// 2025-06-18 and later; data that is not valid base64, or too large, is
// dropped with a note.
func TestBinaryResultRendered(t *testing.T) {
	png := fakePNG(100_000, 1)
	jpeg := []byte("\xff\xd8\xff\xe0 a small jpeg")
	pdf := []byte("%PDF-1.7 a small pdf")
	blob := []byte{0, 1, 2, 3}
	huge := fakePNG(20<<20, 2)
	type resource struct {
		uri, mime string
		data      []byte
	}
	tests := []struct {
		name      string
		result    map[string]any
		want      []string   // in the answer's text
		resources []resource // kept, in the order the text names them
	}{
		{"png at the top level", func() map[string]any {
			r := shot("image/png", png)
			r["ok"], r["url"] = true, "http://127.0.0.1/"
			return r
		}(), []string{`"bytes":100000`, `"encoding":"base64"`, `"media_type":"image/png"`, `"ok":true`, `"uri":"manglecp://results/1.png"`},
			[]resource{{"manglecp://results/1.png", "image/png", png}}},
		{"nested, mime_type", map[string]any{"page": map[string]any{"shots": []any{
			"first", map[string]any{"mime_type": "image/jpeg", "encoding": "base64", "data": base64.StdEncoding.EncodeToString(jpeg)}}}},
			[]string{`{"page":{"shots":["first",{"encoding":"base64","mime_type":"image/jpeg","uri":"manglecp://results/1.jpeg"}]}}`},
			[]resource{{"manglecp://results/1.jpeg", "image/jpeg", jpeg}}},
		{"two objects, in key order", map[string]any{"b": shot("Application/X-Thing; v=1", blob), "a": shot("application/pdf", pdf)},
			[]string{`"a":{"bytes":20,"encoding":"base64","media_type":"application/pdf","uri":"manglecp://results/1.pdf"}`, `"uri":"manglecp://results/2.bin"`},
			[]resource{{"manglecp://results/1.pdf", "application/pdf", pdf}, {"manglecp://results/2.bin", "application/x-thing", blob}}},
		{"not valid base64", map[string]any{"shot": map[string]any{"media_type": "image/png", "encoding": "base64", "data": "not base64!"}},
			[]string{`{"shot":{"encoding":"base64","media_type":"image/png","note":"data not shown: not valid base64"}}`}, nil},
		{"deeper than the walk", map[string]any{"a": map[string]any{"b": map[string]any{"c": map[string]any{"d": shot("image/png", blob)}}}},
			[]string{`"data":"AAECAw=="`}, nil},
		{"over 16 MiB", shot("image/png", huge),
			[]string{`"note":"data not kept: 20971520 bytes, over the bridge's bound of 16777216 bytes"`}, nil},
	}
	for _, tt := range tests {
		for _, version := range []string{"2025-03-26", "2025-11-25"} {
			t.Run(tt.name+"/"+version, func(t *testing.T) {
				h := resultHarness(t, version, tt.result)
				res := trace(t, h)
				got := text(res)
				for _, w := range tt.want {
					if !strings.Contains(got, w) {
						t.Errorf("answer lacks %s:\n%s", w, bounded(got))
					}
				}
				if tt.name != "deeper than the walk" && (strings.Contains(got, `"data"`) || len(got) > 1000) {
					t.Errorf("answer carries the data (%d bytes):\n%s", len(got), bounded(got))
				}
				var wantLinks []string
				for _, r := range tt.resources {
					data, mime, err := readBlob(t, h.cs, r.uri)
					if err != nil {
						t.Fatalf("read %s: %v", r.uri, err)
					}
					if !bytes.Equal(data, r.data) || mime != r.mime {
						t.Errorf("%s: %d bytes of %s, want %d bytes of %s, identical", r.uri, len(data), mime, len(r.data), r.mime)
					}
					if version >= "2025-06-18" {
						wantLinks = append(wantLinks, r.uri+" "+r.mime)
					}
				}
				var gotLinks []string
				for _, l := range links(res) {
					gotLinks = append(gotLinks, l.URI+" "+l.MIMEType)
				}
				if fmt.Sprint(gotLinks) != fmt.Sprint(wantLinks) {
					t.Errorf("resource links %v, want %v", gotLinks, wantLinks)
				}
				if _, ok := res.Content[0].(*mcp.TextContent); !ok || len(res.Content) != 1+len(wantLinks) {
					t.Errorf("content %d items, want the text then %d links", len(res.Content), len(wantLinks))
				}
			})
		}
	}
}

// bounded clips a long answer for a test's message.
func bounded(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return s
}

// TestBinaryResultsBounded: a session keeps at most MaxResults results of
// at most MaxResultBytes in all; keeping another evicts the oldest, and
// reading an evicted one is the SDK's resource-not-found error.
func TestBinaryResultsBounded(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name  string
		sizes []int
		gone  []int // results evicted, numbered from 1
	}{
		{"the 9th evicts the 1st", []int{1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}, []int{1}},
		{"16 MiB in all", []int{7 * mib, 7 * mib, 3 * mib}, []int{1}},
		{"one of 16 MiB evicts every other", []int{1000, 1000, mcpbridge.MaxResultBytes}, []int{1, 2}},
		{"within both bounds", []int{4 * mib, 4 * mib, 4 * mib, 4 * mib}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var results []map[string]any
			var datas [][]byte
			for i, n := range tt.sizes {
				d := fakePNG(n, byte(i))
				datas = append(datas, d)
				results = append(results, shot("image/png", d))
			}
			h := resultHarness(t, "", results...)
			for i := range results {
				want := fmt.Sprintf(`"uri":"manglecp://results/%d.png"`, i+1)
				if got := text(trace(t, h)); !strings.Contains(got, want) {
					t.Fatalf("call %d: answer lacks %s:\n%s", i+1, want, bounded(got))
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			list, err := h.cs.ListResources(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var listed []string
			for _, r := range list.Resources {
				if strings.HasPrefix(r.URI, mcpbridge.ResultURIPrefix) {
					listed = append(listed, r.URI)
				}
			}
			var kept []string
			for i, d := range datas {
				uri := fmt.Sprintf("manglecp://results/%d.png", i+1)
				evicted := false
				for _, g := range tt.gone {
					evicted = evicted || g == i+1
				}
				if !evicted && len(d) > 12*mib {
					// Its base64 is over the 16 MiB frame the SDK's
					// in-memory (and stdio) client reads by default.
					kept = append(kept, uri)
					continue
				}
				data, _, err := readBlob(t, h.cs, uri)
				switch {
				case evicted && !notFound(err):
					t.Errorf("%s was evicted; read: %d bytes, %v; want resource not found", uri, len(data), err)
				case !evicted && err != nil:
					t.Errorf("read %s: %v", uri, err)
				case !evicted:
					kept = append(kept, uri)
					if !bytes.Equal(data, d) {
						t.Errorf("%s: %d bytes, want %d, identical", uri, len(data), len(d))
					}
				}
			}
			if strings.Join(listed, " ") != strings.Join(kept, " ") {
				t.Errorf("resources/list has %v, want %v", listed, kept)
			}
		})
	}
}

// TestBinaryResultRunAtOnce: the result of a tool the rules decided (run
// in the call that selected it) is shown the same way, with its link.
func TestBinaryResultRunAtOnce(t *testing.T) {
	png := fakePNG(5000, 3)
	fake := newFake()
	fake.setEvaluate(selects(decided("trace", "r2")))
	fake.setInvoke(func(context.Context, *protocol.InvokeRequest, func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error) {
		return &protocol.InvokeResponse{Result: map[string]any{"screenshot": shot("image/png", png)}, Observability: protocol.Observability{Summary: "Captured."}}, nil
	})
	h := newHarness(t, fake, nil, hostOptions{})
	res := h.call(t, "diagnose", diagnoseArgs)
	if !strings.Contains(text(res), "Ran trace(request_id=\"r2\") at once") || !strings.Contains(text(res), `"uri":"manglecp://results/1.png"`) || strings.Contains(text(res), `"data"`) {
		t.Fatalf("answer:\n%s", bounded(text(res)))
	}
	if l := links(res); len(l) != 1 || l[0].URI != "manglecp://results/1.png" {
		t.Errorf("links %v", l)
	}
	if data, _, err := readBlob(t, h.cs, "manglecp://results/1.png"); err != nil || !bytes.Equal(data, png) {
		t.Errorf("read: %d bytes, %v", len(data), err)
	}
}

// TestBinaryResultsPerSession: another MCP session of the same bridge
// neither reads nor lists a session's results.
func TestBinaryResultsPerSession(t *testing.T) {
	h := resultHarness(t, "", shot("image/png", fakePNG(1000, 4)))
	trace(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	go func() { _ = h.bridge.Run(ctx, st) }()
	other, err := mcp.NewClient(&mcp.Implementation{Name: "other-host", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, _, err := readBlob(t, other, "manglecp://results/1.png"); !notFound(err) {
		t.Errorf("another session read a session's result: %v", err)
	}
	if _, _, err := readBlob(t, h.cs, "manglecp://results/1.png"); err != nil {
		t.Errorf("the session's own result: %v", err)
	}
}

// TestScreenshotOverStdio: `manglecp mcp` over stdio (the embedded browser
// domain, real Chromium): screenshot_page's answer carries no base64, and
// the screenshot is a resource the host reads, a PNG.
func TestScreenshotOverStdio(t *testing.T) {
	if os.Getenv("MANGLECP_NO_BROWSER") == "1" {
		t.Skip("MANGLECP_NO_BROWSER=1: browser tests are turned off")
	}
	chromium := testenv.LookPath(t, chrome.DefaultNames...)
	bin := builds.Manglecp(t)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Shot</title><h1>Screenshot me</h1><p style="background:#c33;height:300px">red</p>`)
	}))
	defer page.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(bin, "mcp", "--browser-path", chromium)
	stderr := &testenv.Buffer{}
	cmd.Stderr = stderr
	cl := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer func() {
		if err := cs.Close(); err != nil {
			t.Logf("close: %v\n%s", err, stderr.String())
		}
	}()
	call := func(name string, args any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %s\n%s", name, err, text(res), stderr.String())
		}
		return text(res)
	}
	if got := call("observe", map[string]any{"facts": []any{[]any{"current_url", page.URL}}}); !strings.Contains(got, "screenshot_page") {
		t.Fatalf("observe does not offer screenshot_page:\n%s", got)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpbridge.MetaToolName, Arguments: map[string]any{"tool": "screenshot_page", "arguments": map[string]any{"url": page.URL}}})
	if err != nil || res.IsError {
		t.Fatalf("screenshot_page: %v %s\n%s", err, text(res), stderr.String())
	}
	got := text(res)
	t.Logf("screenshot_page answers (%d bytes, %d content items): %s", len(got), len(res.Content), got)
	if strings.Contains(got, `"data"`) || strings.Contains(got, "iVBORw0KGgo") || len(got) > 1000 {
		t.Errorf("the answer carries base64:\n%s", bounded(got))
	}
	uri := regexp.MustCompile(`manglecp://results/[0-9]+\.png`).FindString(got)
	if uri == "" {
		t.Fatalf("no result URI in the answer:\n%s", got)
	}
	if l := links(res); len(l) != 1 || l[0].URI != uri || l[0].MIMEType != "image/png" {
		t.Errorf("resource links %+v, want one to %s", l, uri)
	}
	data, mime, err := readBlob(t, cs, uri)
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	if mime != "image/png" || !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) || !strings.Contains(got, fmt.Sprintf(`"bytes":%d`, len(data))) {
		t.Errorf("%s: %d bytes of %s (answer %s)", uri, len(data), mime, got)
	}
}
