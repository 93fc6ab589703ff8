package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/coder/websocket"

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

// start serves the browser domain on a loopback listener with opts and
// returns its address and a function that stops it and waits for Serve.
func start(t *testing.T, opts *serve.Options) (addr string, stop func()) {
	t.Helper()
	ready := make(chan struct{})
	addr, done, stop := background(t, browser.Domain(browser.Config{ReportDir: t.TempDir()}), opts, func(o *serve.Options) { o.Ready = func(net.Addr) { close(ready) } }, nil)
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Serve: %v", err)
	}
	return addr, stop
}

// background runs serve.Serve with d on a loopback listener, with a copy
// of opts (nil: none) that set changes, until stop, which cancels its
// context, calls then (when not nil) and waits for Serve to return, at
// most 15 s; stop runs when t ends and does its work once. It returns the
// listener's address; Serve's result arrives on done when it returns
// before stop.
func background(t *testing.T, d manglecp.Domain, opts *serve.Options, set func(*serve.Options), then func()) (addr string, done <-chan error, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var o serve.Options
	if opts != nil {
		o = *opts
	}
	set(&o)
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() { result <- serve.Serve(ctx, ln, d, &o) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if then != nil {
				then()
			}
			select {
			case err := <-result:
				if err != nil {
					t.Errorf("Serve returned %v after ctx ended", err)
				}
			case <-time.After(15 * time.Second):
				t.Error("Serve did not return after ctx ended")
			}
		})
	}
	t.Cleanup(stop)
	return ln.Addr().String(), result, stop
}

// TestServeHostAllowList: on a loopback address only the loopback names
// and AllowedHosts are answered (DNS rebinding), "*" answers any Host.
func TestServeHostAllowList(t *testing.T) {
	for _, tc := range []struct {
		name    string
		allowed []string
		host    string
		ok      bool
	}{
		{"loopback name", nil, "localhost", true},
		{"loopback address", nil, "127.0.0.1", true},
		{"other name", nil, "rebound.example", false},
		{"allowed name", []string{"app.test"}, "app.test", true},
		{"allowed name, other asked", []string{"app.test"}, "rebound.example", false},
		{"any host", []string{"*"}, "rebound.example", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := start(t, &serve.Options{AllowedHosts: tc.allowed})
			req, _ := http.NewRequest("GET", "http://"+addr+transport.ManifestPath, nil)
			req.Host = tc.host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			refused := strings.Contains(string(body), string(protocol.CodeHostNotAllowed))
			if (resp.StatusCode == 200) != tc.ok || refused == tc.ok {
				t.Errorf("Host %s: %d %s, want answered=%v", tc.host, resp.StatusCode, body, tc.ok)
			}
		})
	}
}

func TestHostAllowList(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		extra []string
		want  string
	}{
		{"127.0.0.1:8080", nil, "localhost,127.0.0.1,::1,127.0.0.1"},
		{"localhost:8080", []string{" a.test ", ""}, "a.test,localhost,127.0.0.1,::1"},
		{"[::1]:8080", nil, "localhost,127.0.0.1,::1,::1"},
		{"0.0.0.0:8080", nil, ""},
		{"[::]:8080", []string{"a.test"}, "a.test"},
		{"127.0.0.1:8080", []string{"a.test", "*"}, ""},
	} {
		if got := strings.Join(serve.HostAllowList(tc.addr, tc.extra), ","); got != tc.want {
			t.Errorf("HostAllowList(%s, %q) = %s, want %s", tc.addr, tc.extra, got, tc.want)
		}
	}
}

// TestServeLimitsConnectionsPerIP: a connection beyond MaxConnsPerIP from
// one IP is closed when accepted.
func TestServeLimitsConnectionsPerIP(t *testing.T) {
	addr, _ := start(t, &serve.Options{MaxConnsPerIP: 2})
	get := func(c net.Conn) error {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "GET "+transport.ManifestPath+" HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	var conns []net.Conn
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	if get(conns[0]) != nil || get(conns[1]) != nil {
		t.Fatal("the first two connections are not served")
	}
	if err := get(conns[2]); err == nil {
		t.Error("a third connection from one IP was served")
	}
}

// TestServeDrains: when ctx ends, a WebSocket session is closed with 1001
// (going away), the listener is closed and Serve returns.
func TestServeDrains(t *testing.T) {
	addr, stop := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/manglecp/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if _, raw, err := c.Read(ctx); err != nil || !strings.Contains(string(raw), `"manifest"`) {
		t.Fatalf("first message: %v %s", err, raw)
	}
	go stop()
	for {
		_, _, err := c.Read(ctx) // the draining manifest, then the close frame
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusGoingAway {
				t.Errorf("session ended with %v (%v), want 1001", websocket.CloseStatus(err), err)
			}
			break
		}
	}
	stop()
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("the listener is still open after draining")
	}
}

// TestServeOpsEndpoints: /healthz and /readyz on the main listener,
// /metrics there when Metrics is set, or on OpsListener alone when that is
// set.
func TestServeOpsEndpoints(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "manglecp_test_metric 1\n") })
	for _, tc := range []struct {
		name       string
		separate   bool
		mainMetric bool
	}{
		{"metrics on the main listener", false, true},
		{"metrics on the operations listener", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &serve.Options{Metrics: metrics}
			var opsAddr string
			if tc.separate {
				oln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				o.OpsListener, opsAddr = oln, oln.Addr().String()
			}
			addr, stop := start(t, o)
			get := func(addr, path string) (int, string) {
				resp, err := http.Get("http://" + addr + path)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			for _, p := range []string{transport.HealthzPath, transport.ReadyzPath} {
				if code, body := get(addr, p); code != 200 {
					t.Errorf("%s: %d %s", p, code, body)
				}
			}
			code, body := get(addr, transport.MetricsPath)
			if got := code == 200 && strings.Contains(body, "manglecp_test_metric"); got != tc.mainMetric {
				t.Errorf("main listener /metrics: %d %s, want served=%v", code, body, tc.mainMetric)
			}
			if tc.separate {
				if code, body := get(opsAddr, transport.MetricsPath); code != 200 || !strings.Contains(body, "manglecp_test_metric") {
					t.Errorf("operations listener /metrics: %d %s", code, body)
				}
				if code, body := get(opsAddr, transport.ReadyzPath); code != 200 {
					t.Errorf("operations listener /readyz: %d %s", code, body)
				}
				stop()
				if c, err := net.Dial("tcp", opsAddr); err == nil {
					c.Close()
					t.Error("the operations listener is still open after Serve returned")
				}
			}
		})
	}
}
