package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// dialer opens a session to a fresh browser server with authentication on
// over one transport.
type dialer struct {
	name     string
	progress bool // the transport carries progress messages
	dial     func(t *testing.T, opts *client.Options) (*client.Session, error)
}

func dialers() []dialer {
	return []dialer{
		{"http", false, func(t *testing.T, opts *client.Options) (*client.Session, error) {
			hs := serveHTTP(t, newServer(t, withAuth))
			return client.Dial(ctxT(t), hs.URL, opts)
		}},
		{"websocket", true, func(t *testing.T, opts *client.Options) (*client.Session, error) {
			hs := serveHTTP(t, newServer(t, withAuth))
			return client.Dial(ctxT(t), wsURL(hs), opts)
		}},
		{"memory", true, func(t *testing.T, opts *client.Options) (*client.Session, error) {
			return memorySession(t, newServer(t, withAuth), nil, opts), nil
		}},
		{"stdio", true, func(t *testing.T, opts *client.Options) (*client.Session, error) {
			bin := buildBinary(t) // before the dial's deadline starts: building may be slow
			return client.Dial(ctxT(t), "stdio:"+bin+" serve --stdio --config "+stdioConfig(t), opts)
		}},
	}
}

// TestTransports runs one scenario against a real server over HTTP,
// WebSocket, the in-memory pair and the stdio binary: manifest,
// authentication, evaluate, invoke, typed errors, confirmation, progress and
// local fact validation. Every transport must give the same macro_ids and
// results.
func TestTransports(t *testing.T) {
	type outcome struct{ macros, result string }
	var mu sync.Mutex
	results := map[string]outcome{}
	for _, d := range dialers() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			s, err := d.dial(t, &client.Options{Token: testToken})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// The deadline starts after the dial: building the stdio
			// binary may take most of a minute on a loaded machine.
			ctx := ctxT(t)
			m := s.Manifest()
			if m.Domain.ID != browser.ID || !m.Auth.Required || m.Status != protocol.StatusReady {
				t.Fatalf("manifest: domain %q, auth %v, status %s", m.Domain.ID, m.Auth.Required, m.Status)
			}
			if got := s.Transport(); got != d.name && !(d.name == "memory" && got == "conn") {
				t.Errorf("Transport() = %q", got)
			}
			if a := s.Authentication(); d.name == "http" && a != nil {
				t.Errorf("HTTP sent an authenticate message: %+v", a)
			} else if d.name != "http" && (a == nil || a.Identity == nil || *a.Identity != "token-1") {
				t.Errorf("authentication: %+v", a)
			}

			resp, err := s.Evaluate(ctx, diagnoseRequest())
			if err != nil {
				t.Fatal(err)
			}
			var names, ids []string
			for _, mt := range resp.MacroTools {
				names = append(names, mt.Name)
				ids = append(ids, mt.MacroID)
			}
			sort.Strings(names)
			if strings.Join(names, ",") != "diagnose_causal_chain,inspect_console_errors,write_diagnosis_report" {
				t.Fatalf("macro-tools %v", names)
			}

			out, err := s.Invoke(ctx, &protocol.InvokeRequest{MacroID: macro(t, resp, "diagnose_causal_chain"), Args: map[string]any{"request_id": "r42"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Result["root_cause"]; got != "GET https://api.example.com/users returned HTTP 404" {
				t.Errorf("root_cause %v", got)
			}
			if len(out.StateDelta.Assert) != 1 || out.StateDelta.Assert[0].Pred != "diagnosed_error" {
				t.Errorf("state delta %+v", out.StateDelta)
			}

			// A typed error: the code, the status, the details, errors.Is.
			report := &protocol.InvokeRequest{MacroID: macro(t, resp, "write_diagnosis_report"), Args: map[string]any{"request_id": "r42"}}
			_, err = s.Invoke(ctx, report)
			var ce *client.Error
			if !errors.As(err, &ce) || ce.Code() != protocol.CodeConfirmationRequired || ce.Status != http.StatusForbidden ||
				!ce.Recoverable() || ce.Attempts != 1 || ce.RequestID == "" || ce.Local || ce.Details().MacroID != report.MacroID {
				t.Fatalf("without confirmation: %#v", err)
			}
			if !errors.Is(err, &protocol.Error{Code: protocol.CodeConfirmationRequired}) || errors.Is(err, &protocol.Error{Code: protocol.CodeConfirmationInvalid}) {
				t.Errorf("errors.Is by code fails for %v", err)
			}

			// Confirmed, with progress on session transports.
			var progress []string
			out, err = s.Invoke(ctx, report, client.WithConfirmation(testKey, time.Minute),
				client.WithProgress(func(p protocol.Progress) { progress = append(progress, p.Status) }))
			if err != nil {
				t.Fatal(err)
			}
			if out.Result["report"] == nil {
				t.Errorf("report result %v", out.Result)
			}
			want := []string{"started", "running", "finalizing"}
			if !d.progress {
				want = nil
			}
			if !slices.Equal(progress, want) {
				t.Errorf("progress %v, want %v", progress, want)
			}

			_, err = s.Invoke(ctx, &protocol.InvokeRequest{MacroID: "nope"})
			if !errors.As(err, &ce) || ce.Code() != protocol.CodeMacroNotFound || ce.Status != http.StatusNotFound || ce.Details().MacroID != "nope" {
				t.Errorf("unknown macro: %v", err)
			}

			// Invalid facts are refused locally, with the server's error.
			bad := diagnoseRequest()
			bad.Facts[3] = protocol.NewFact("net_response", "s1", "r42")
			_, err = s.Evaluate(ctx, bad)
			if !errors.As(err, &ce) || !ce.Local || ce.Code() != protocol.CodeArityMismatch || ce.Status != http.StatusBadRequest || ce.Attempts != 0 {
				t.Errorf("local validation: %v", err)
			}

			mu.Lock()
			results[d.name] = outcome{strings.Join(ids, " "), mustJSON(t, out.Result["root_cause"])}
			mu.Unlock()
		})
	}
	t.Cleanup(func() {
		for name, got := range results {
			if got != results["http"] {
				t.Errorf("%s differs from http: %+v vs %+v", name, got, results["http"])
			}
		}
	})
}

// TestAuth checks that the token reaches the server over each network
// transport, and that its absence or a wrong token gives the registry's
// auth errors.
func TestAuth(t *testing.T) {
	tests := []struct {
		name, transport, token string
		dialCode, callCode     protocol.Code // "" when the step succeeds
	}{
		{"http without token", "http", "", "", protocol.CodeAuthRequired},
		{"http wrong token", "http", "wrong-token-0123456789", "", protocol.CodeAuthInvalid},
		{"http token", "http", testToken, "", ""},
		{"websocket without token", "websocket", "", "", protocol.CodeAuthRequired},
		{"websocket wrong token", "websocket", "wrong-token-0123456789", protocol.CodeAuthInvalid, ""},
		{"websocket token", "websocket", testToken, "", ""},
		{"http API key header", "http", "header", "", ""},
		{"websocket API key header", "websocket", "header", "", ""},
		{"memory without token", "memory", "", "", protocol.CodeAuthRequired},
		{"memory wrong token", "memory", "wrong-token-0123456789", protocol.CodeAuthInvalid, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			srv := newServer(t, withAuth)
			opts := &client.Options{Token: tc.token, MaxAttempts: 1}
			if tc.token == "header" { // the api_key scheme, through Options.Header
				opts = &client.Options{Header: http.Header{"X-Manglecp-Api-Key": {testToken}}, MaxAttempts: 1}
			}
			var s *client.Session
			var err error
			switch tc.transport {
			case "http":
				s, err = client.Dial(ctx, serveHTTP(t, srv).URL, opts)
			case "websocket":
				s, err = client.Dial(ctx, wsURL(serveHTTP(t, srv)), opts)
			case "memory":
				s, err = client.NewSession(ctx, memoryConn(t, srv, nil), opts)
			}
			if tc.dialCode != "" {
				var ce *client.Error
				if !errors.As(err, &ce) || ce.Code() != tc.dialCode {
					t.Fatalf("dial: %v, want %s", err, tc.dialCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = s.Evaluate(ctx, diagnoseRequest())
			if tc.callCode == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *client.Error
			if !errors.As(err, &ce) || ce.Code() != tc.callCode || ce.Status != http.StatusUnauthorized {
				t.Fatalf("evaluate: %v, want %s (401)", err, tc.callCode)
			}
		})
	}
}

// TestStdioEnvToken: the token reaches a stdio server through
// MANGLECP_AUTH_TOKEN, and a server that exits before its manifest is
// explained by its stderr.
func TestStdioEnvToken(t *testing.T) {
	bin := buildBinary(t)
	ctx := ctxT(t)
	_, err := client.Dial(ctx, "stdio:"+bin+" serve --stdio", &client.Options{Token: "short"})
	var te *client.TransportError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "at least 16 characters") {
		t.Fatalf("short token: %v, want the server's complaint from stderr", err)
	}
	s, err := client.Dial(ctx, "stdio:"+bin+" serve --stdio", &client.Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Manifest().Auth.Required {
		t.Error("the server did not turn authentication on with the token")
	}
	if _, err := s.Evaluate(ctx, diagnoseRequest()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close: %v (the server should exit 0 at EOF)", err)
	}
	if _, err := s.Evaluate(ctx, diagnoseRequest()); !errors.Is(err, client.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

// TestDialErrors: targets that are not MangleCP servers fail with a
// TransportError.
func TestDialErrors(t *testing.T) {
	notFound := serveHTTPFunc(t, func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	html := serveHTTPFunc(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("<html></html>")) })
	tests := []struct {
		name, target string
		status       int
		contains     string
	}{
		{"scheme", "ftp://example.com", 0, "unsupported scheme"},
		{"stdio without command", "stdio:  ", 0, "names no command"},
		{"stdio missing binary", "stdio:/nonexistent/manglecp serve --stdio", 0, "nonexistent"},
		{"stdio not a server", "stdio:true", 0, "ended the session"},
		{"not found", notFound.URL, http.StatusNotFound, "does not serve MangleCP"},
		{"not MangleCP", html.URL, http.StatusOK, "not a MangleCP message"},
		{"websocket on a plain page", "ws" + strings.TrimPrefix(html.URL, "http") + "/manglecp/ws", http.StatusOK, "dial"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := client.Dial(ctxT(t), tc.target, nil)
			if err == nil {
				s.Close()
				t.Fatal("dial succeeded")
			}
			var te *client.TransportError
			if !errors.As(err, &te) || te.Status != tc.status || !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("got %v (status %d), want a TransportError with status %d containing %q", err, statusOf(te), tc.status, tc.contains)
			}
		})
	}
}

func statusOf(te *client.TransportError) int {
	if te == nil {
		return -1
	}
	return te.Status
}

// TestDialContext: a dial whose context ends returns the context's error.
func TestDialContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	hs := serveHTTP(t, newServer(t, nil))
	for _, target := range []string{hs.URL, wsURL(hs)} {
		if _, err := client.Dial(ctx, target, nil); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want context.Canceled", target, err)
		}
	}
}

// TestDialHTTPManifest: the manifest comes from the well-known path on the
// target's host, or from the target itself when it names a manifest.json;
// relative endpoints resolve against the manifest's URL.
func TestDialHTTPManifest(t *testing.T) {
	srv := newServer(t, func(o *manglecp.Options) { o.BasePath = "/svc/api" })
	api := transport.NewHTTPHandler(srv, &transport.HTTPOptions{BasePath: "/svc/api"})
	relative, _ := srv.ManifestJSON()
	var m map[string]any
	_ = json.Unmarshal(relative, &m)
	m["endpoints"] = map[string]any{"intent_eval": "api/evaluate", "macro_invoke": "api/invoke"}
	relative, _ = json.Marshal(m)
	hs := serveHTTPFunc(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/svc/manifest.json" {
			raw, _ := (&protocol.Envelope{Type: protocol.TypeManifest, Version: protocol.Version, Payload: relative}).Encode()
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(raw)
			return
		}
		api.ServeHTTP(w, r)
	})
	tests := []struct{ name, path string }{
		{"host", ""},
		{"a page of the host", "/some/page?x=1"},
		{"a manifest.json with relative endpoints", "/svc/manifest.json"},
		{"the well-known manifest", transport.ManifestPath},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := client.Dial(ctxT(t), hs.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			resp, err := s.Evaluate(ctxT(t), diagnoseRequest())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Invoke(ctxT(t), &protocol.InvokeRequest{MacroID: macro(t, resp, "inspect_console_errors")}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
