package manglecp_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

func manifestStatus(t *testing.T, s *manglecp.Server) protocol.Status {
	t.Helper()
	raw, _ := s.ManifestJSON()
	var m protocol.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m.Status
}

// TestDrainIsFinalUnderRace: SetDegraded racing Drain never turns a
// draining server's status or manifest back to ready or degraded.
func TestDrainIsFinalUnderRace(t *testing.T) {
	d := browser.Domain(browser.Config{ReportDir: t.TempDir(), Config: chrome.Config{Path: "none"}})
	for round := 0; round < 20; round++ {
		s, err := manglecp.NewServer(d, &manglecp.Options{ConfirmationKey: []byte("k")})
		if err != nil {
			t.Fatal(err)
		}
		var running, wg sync.WaitGroup
		stop := make(chan struct{})
		for g := 0; g < 8; g++ {
			running.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					if (g+i)%2 == 0 {
						s.SetDegraded("racing")
					} else {
						s.SetDegraded("")
					}
					if i == 0 {
						running.Done()
					}
					select {
					case <-stop:
						return
					default:
					}
				}
			}()
		}
		running.Wait() // every goroutine is changing the status
		s.Drain()
		close(stop)
		wg.Wait()
		if st, ms := s.Status(), manifestStatus(t, s); st != protocol.StatusDraining || ms != protocol.StatusDraining {
			t.Fatalf("round %d: after Drain, status %s and manifest %s, want draining", round, st, ms)
		}
	}
}

// TestLoad: New answers booting; Load makes the server ready (degraded
// when SetDegraded was called while booting); a second Load fails; a
// server whose rules do not load is stopped; a server drained while
// booting stays draining.
func TestLoad(t *testing.T) {
	d := browser.Domain(browser.Config{ReportDir: t.TempDir(), Config: chrome.Config{Path: "none"}})
	opts := &manglecp.Options{ConfirmationKey: []byte("k")}
	s := manglecp.New(d, opts)
	if s.Status() != protocol.StatusBooting || manifestStatus(t, s) != protocol.StatusBooting {
		t.Fatalf("New: %s", s.Status())
	}
	if _, etag := s.ManifestJSON(); etag != `"booting"` {
		t.Errorf("booting ETag %s", etag)
	}
	if err := s.Reload(d.Rules); err == nil {
		t.Error("Reload of a booting server did not fail")
	}
	s.SetDegraded("known before loading")
	if s.Status() != protocol.StatusBooting {
		t.Fatalf("SetDegraded while booting: %s", s.Status())
	}
	if err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.Status() != protocol.StatusDegraded || s.Manifest().Extensions["x-degraded_reason"] != "known before loading" {
		t.Fatalf("after Load: %s %v", s.Status(), s.Manifest().Extensions["x-degraded_reason"])
	}
	if err := s.Load(context.Background()); err == nil {
		t.Error("a second Load did not fail")
	}

	bad := manglecp.Domain{ID: "bad", Description: "bad", RulesName: "rules",
		Rules: fstest.MapFS{"domain/bad.mg": {Data: []byte("this is not mangle\n")}}}
	b := manglecp.New(bad, opts)
	if err := b.Load(context.Background()); err == nil {
		t.Fatal("bad rules loaded")
	}
	if b.Status() != protocol.StatusDraining {
		t.Errorf("after a failed Load: %s, want draining (stopped)", b.Status())
	}

	dr := manglecp.New(d, opts)
	dr.Drain()
	if err := dr.Load(context.Background()); err == nil || dr.Status() != protocol.StatusDraining {
		t.Errorf("Load after Drain: %v, status %s", err, dr.Status())
	}
}

// TestBootingAuthRequired: whether auth is required is known while
// booting, OAuth included.
func TestBootingAuthRequired(t *testing.T) {
	d := browser.Domain(browser.Config{ReportDir: t.TempDir(), Config: chrome.Config{Path: "none"}})
	for _, tc := range []struct {
		name string
		opts *manglecp.Options
		want bool
	}{
		{"none", nil, false},
		{"identities", &manglecp.Options{Identities: []manglecp.Identity{{Name: "a", Token: "t"}}}, true},
		{"oauth", &manglecp.Options{OAuth: &manglecp.OAuth{Issuer: "https://idp.example", Audience: "a", JWKSURL: "http://127.0.0.1:1/jwks"}}, true},
	} {
		s := manglecp.New(d, tc.opts)
		raw, _ := s.ManifestJSON()
		var m protocol.Manifest
		_ = json.Unmarshal(raw, &m)
		if s.AuthRequired() != tc.want || m.Auth.Required != tc.want {
			t.Errorf("%s: AuthRequired %v, manifest auth.required %v, want %v", tc.name, s.AuthRequired(), m.Auth.Required, tc.want)
		}
	}
}

// TestSessionOpenedBeforeLoad: a session served by a booting server gets
// the booting manifest, then the ready one when Load is done.
func TestSessionOpenedBeforeLoad(t *testing.T) {
	d := browser.Domain(browser.Config{ReportDir: t.TempDir(), Config: chrome.Config{Path: "none"}})
	s := manglecp.New(d, &manglecp.Options{ConfirmationKey: []byte("k")})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, server := transport.NewMemoryPair()
	go func() { _ = transport.ServeSession(ctx, s, server, nil) }()
	defer client.Close()
	next := func() protocol.Manifest {
		t.Helper()
		rctx, rc := context.WithTimeout(ctx, 5*time.Second)
		defer rc()
		raw, err := client.ReadMessage(rctx)
		if err != nil {
			t.Fatal(err)
		}
		var env protocol.Envelope
		var m protocol.Manifest
		if json.Unmarshal(raw, &env) != nil || env.Type != protocol.TypeManifest || json.Unmarshal(env.Payload, &m) != nil {
			t.Fatalf("not a manifest: %s", raw)
		}
		return m
	}
	if m := next(); m.Status != protocol.StatusBooting {
		t.Fatalf("first manifest %s", m.Status)
	}
	if err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if m := next(); m.Status != protocol.StatusReady || len(m.Intents) == 0 {
		t.Fatalf("after Load: %s with %d intents", m.Status, len(m.Intents))
	}
}
