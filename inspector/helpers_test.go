package inspector_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/inspector"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// testKey is the confirmation key the test server and inspector share.
var testKey = []byte("inspector-test-confirmation-key")

// fixture is an inspector over an in-process default-domain server,
// served on a loopback httptest server.
type fixture struct {
	in   *inspector.Inspector
	sess *client.Session
	srv  *manglecp.Server
	http *httptest.Server
	// reports is the browser domain's report directory.
	reports string
}

// newFixture starts the default domain in process, a client session over
// the in-memory transport, and the inspector's handler on loopback.
func newFixture(t *testing.T, opts *inspector.Options) *fixture {
	t.Helper()
	reports := t.TempDir()
	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: reports}), &manglecp.Options{ConfirmationKey: testKey, RuleCoverage: false})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	conn, serverConn := transport.NewMemoryPair()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = transport.ServeSession(ctx, srv, serverConn, nil)
	}()
	sess, err := client.NewSession(ctx, conn, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var o inspector.Options
	if opts != nil {
		o = *opts
	}
	if o.ConfirmationKey == nil {
		o.ConfirmationKey = testKey
	}
	in, err := inspector.New(sess, &o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(in.Handler())
	t.Cleanup(func() {
		hs.Close()
		_ = sess.Close()
		cancel()
		<-done
	})
	return &fixture{in: in, sess: sess, srv: srv, http: hs, reports: reports}
}

// call makes an API call with the session token and decodes the answer.
func (f *fixture) call(t *testing.T, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, f.http.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(inspector.TokenHeader, f.in.Token())
	resp, err := f.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(out); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, raw)
		}
	}
	return resp.StatusCode
}

// diagnoseFacts are the README's example facts: a failed request followed
// by a console error.
func diagnoseFacts() []protocol.Fact {
	return []protocol.Fact{
		protocol.NewFact("current_url", "https://app.example.com/dashboard"),
		protocol.NewFact("console_event", "s1", "error", "TypeError: Cannot read properties of null", json.Number("1771510200000")),
		protocol.NewFact("net_request", "s1", "r42", "GET", "https://api.example.com/users", json.Number("1771510199000")),
		protocol.NewFact("net_response", "s1", "r42", json.Number("404"), json.Number("1771510199500")),
	}
}

// evalTime is the README's evaluation time.
func evalTime() *protocol.Time {
	return protocol.NewTime(time.Date(2026, 2, 19, 14, 30, 5, 0, time.UTC))
}
