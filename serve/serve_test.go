package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/serve"
	"github.com/manglecp/manglecp/transport"
)

func TestServeAnswersThenDrains(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	d := browser.Domain(browser.Config{ReportDir: t.TempDir()})
	go func() { done <- serve.Serve(ctx, ln, d, &serve.Options{Ready: func(net.Addr) { close(ready) }}) }()
	<-ready
	resp, err := http.Get("http://" + ln.Addr().String() + transport.ManifestPath)
	if err != nil {
		t.Fatal(err)
	}
	var env protocol.Envelope
	_ = json.NewDecoder(resp.Body).Decode(&env)
	resp.Body.Close()
	var m protocol.Manifest
	_ = json.Unmarshal(env.Payload, &m)
	if resp.StatusCode != 200 || m.Status != protocol.StatusReady {
		t.Fatalf("manifest: %d %s", resp.StatusCode, env.Payload)
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve returned %v after ctx ended", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after ctx ended")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("an idle server took %v to drain", took)
	}
}

func TestServeRejectsBadRules(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := manglecp.Domain{ID: "bad", Description: "bad", RulesName: "rules",
		Rules: fstest.MapFS{"domain/bad.mg": {Data: []byte("tool(\"x\").\nthis is not mangle\n")}}}
	err = serve.Serve(context.Background(), ln, d, nil)
	if err == nil || !strings.Contains(err.Error(), "bad.mg:2") {
		t.Fatalf("err = %v, want one naming bad.mg:2", err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("the listener is still open after a failed start")
	}
}

func TestStdio(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serve.Stdio(context.Background(), browser.Domain(browser.Config{ReportDir: t.TempDir()}), nil, inR, outW)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	if !lines.Scan() || !strings.Contains(lines.Text(), `"type":"manifest"`) {
		t.Fatalf("first line is not the manifest: %q", lines.Text())
	}
	inW.Close() // EOF: the session ends cleanly
	for lines.Scan() {
	}
	if err := <-done; err != nil {
		t.Fatalf("Stdio: %v", err)
	}
}
