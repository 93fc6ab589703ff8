package serve_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/serve"
	"github.com/manglecp/manglecp/transport"
)

// gateFS holds every Open of its rules until open is closed: a server
// whose rules load for as long as a test wants.
type gateFS struct {
	fs.FS
	open chan struct{}
}

func (g gateFS) Open(name string) (fs.File, error) {
	<-g.open
	return g.FS.Open(name)
}

// booting starts Serve on a loopback listener with the browser domain,
// whose rules load only once the returned function is called. It returns
// the address, that function, the server (set once loaded) and a cancel
// that stops Serve and waits for it.
func booting(t *testing.T, opts *serve.Options) (addr string, load func(), loaded <-chan *manglecp.Server, stop func()) {
	t.Helper()
	srvc := make(chan *manglecp.Server, 1)
	d := browser.Domain(browser.Config{ReportDir: t.TempDir(), Config: chrome.Config{Path: "none"}})
	gate := make(chan struct{})
	d.Rules = gateFS{FS: d.Rules, open: gate}
	addr, _, stop = background(t, d, opts, func(o *serve.Options) { o.Loaded = func(s *manglecp.Server) { srvc <- s } }, func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	})
	return addr, func() { close(gate) }, srvc, stop
}

// readManifest reads session messages until a manifest with status want
// (a change may be pushed more than once, e.g. as a domain part reports
// its health), within 5 s.
func readManifest(t *testing.T, c *websocket.Conn, want protocol.Status) protocol.Manifest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		_, raw, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("no %s manifest: %v", want, err)
		}
		var env protocol.Envelope
		if json.Unmarshal(raw, &env) != nil || env.Type != protocol.TypeManifest {
			continue
		}
		var m protocol.Manifest
		if err := json.Unmarshal(env.Payload, &m); err != nil {
			t.Fatal(err)
		}
		if m.Status == want {
			return m
		}
	}
}

// TestSessionOpenedWhileBooting: a WebSocket session opened while the
// server boots receives the ready manifest once the rules are loaded, and
// every later change (degraded, ready again, draining).
func TestSessionOpenedWhileBooting(t *testing.T) {
	addr, load, loaded, stop := booting(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/manglecp/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	readManifest(t, c, protocol.StatusBooting)
	load()
	if m := readManifest(t, c, protocol.StatusReady); len(m.Intents) == 0 {
		t.Fatal("the ready manifest has no intents")
	}
	srv := <-loaded
	srv.SetDegraded("a test reason")
	if m := readManifest(t, c, protocol.StatusDegraded); m.Extensions["x-degraded_reason"] != "a test reason" {
		t.Fatalf("degraded reason %v", m.Extensions["x-degraded_reason"])
	}
	srv.SetDegraded("")
	readManifest(t, c, protocol.StatusReady)
	go stop()
	readManifest(t, c, protocol.StatusDraining)
}

// TestBootingKnowsOAuth: with OAuth alone configured, the booting server
// already requires authentication: its manifest says so, and CORS never
// answers "*" (only listed origins are echoed while auth is on).
func TestBootingKnowsOAuth(t *testing.T) {
	addr, load, loaded, _ := booting(t, &serve.Options{
		Server: &manglecp.Options{OAuth: &manglecp.OAuth{Issuer: "https://idp.example", Audience: "manglecp", JWKSURL: "http://127.0.0.1:1/jwks"}},
		HTTP:   &transport.HTTPOptions{AllowedOrigins: []string{"*"}},
	})
	check := func(want protocol.Status) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+transport.ManifestPath, nil)
		req.Header.Set("Origin", "https://page.example")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var env protocol.Envelope
		_ = json.NewDecoder(resp.Body).Decode(&env)
		var m protocol.Manifest
		_ = json.Unmarshal(env.Payload, &m)
		if m.Status != want || !m.Auth.Required {
			t.Errorf("%s: manifest status %s, auth.required %v", want, m.Status, m.Auth.Required)
		}
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("%s: Access-Control-Allow-Origin %q with auth required", want, got)
		}
	}
	check(protocol.StatusBooting)
	load()
	<-loaded // Load is done: ready
	check(protocol.StatusReady)
}
