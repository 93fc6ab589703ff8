package chrome

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseAllowedHost(t *testing.T) {
	for _, tc := range []struct {
		in, host, port string
		bad            bool
	}{
		{in: "localhost", host: "localhost"},
		{in: " Example.COM ", host: "example.com"},
		{in: "127.0.0.1", host: "127.0.0.1"},
		{in: "127.0.0.1:8080", host: "127.0.0.1", port: "8080"},
		{in: "app.test:0443", host: "app.test", port: "443"},
		{in: "::1", host: "::1"},
		{in: "[::1]", host: "::1"},
		{in: "[::1]:9000", host: "::1", port: "9000"},
		{in: "0:0:0:0:0:0:0:1", host: "::1"},
		{in: "*", host: "*"},
		{in: "", bad: true},
		{in: "http://example.com", bad: true},
		{in: "example.com/path", bad: true},
		{in: "user@example.com", bad: true},
		{in: "example.com:http", bad: true},
		{in: "example.com:70000", bad: true},
		{in: "[::1", bad: true},
		{in: ":80", bad: true},
	} {
		host, port, err := ParseAllowedHost(tc.in)
		if (err != nil) != tc.bad || host != tc.host || port != tc.port {
			t.Errorf("ParseAllowedHost(%q) = %q, %q, %v", tc.in, host, port, err)
		}
	}
}

func TestAllowListPorts(t *testing.T) {
	l, problems := newAllowList([]string{"localhost", "127.0.0.1:8080", "127.0.0.1:9090", "[::1]:81", "bad/entry"})
	if len(problems) != 1 {
		t.Errorf("problems %v", problems)
	}
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://localhost/", true},
		{"http://LOCALHOST:1234/", true}, // a bare host: every port
		{"http://127.0.0.1:8080/", true},
		{"ws://127.0.0.1:9090/ws", true},
		{"http://127.0.0.1:8081/", false},
		{"http://127.0.0.1/", false}, // port 80 is not listed
		{"http://[::1]:81/", true},
		{"http://[::1]/", false},
		{"http://127.0.0.2:8080/", false},
	} {
		u, _ := url.Parse(tc.url)
		if got := l.urlAllows(u); got != tc.ok {
			t.Errorf("%s allowed %v, want %v", tc.url, got, tc.ok)
		}
	}
	if !l.hostAllowed("127.0.0.1") || l.hostAllowed("127.0.0.2") {
		t.Error("hostAllowed")
	}
}

// TestGateRefusesWhatIsNotAllowed: through the gate, plain requests and
// tunnels reach allowed host:port pairs only; refused ones never connect.
func TestGateRefusesWhatIsNotAllowed(t *testing.T) {
	var hits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, "hello")
	}))
	defer target.Close()
	_, port, _ := net.SplitHostPort(target.Listener.Addr().String())
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the host that is not allowed got %s", r.URL)
	}))
	defer other.Close()
	allow, _ := newAllowList([]string{"127.0.0.1:" + port})
	g, err := openGate(allow, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	proxy, _ := url.Parse(g.URL())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}, Timeout: 5 * time.Second}
	res, err := client.Get(target.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(body) != "hello" {
		t.Errorf("allowed: %q", body)
	}
	if _, err := client.Get(other.URL + "/y"); err == nil {
		t.Error("a plain request to a port that is not allowed got an answer")
	}
	// CONNECT, as Chromium does for https and WebSocket.
	for _, dest := range []string{other.Listener.Addr().String(), "127.0.0.2:" + port} {
		c, err := net.Dial("tcp", proxy.Host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dest, dest)
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || res.StatusCode != http.StatusForbidden {
			t.Errorf("CONNECT %s: %v %v", dest, res, err)
		}
		c.Close()
	}
	c, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dest := target.Listener.Addr().String()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nGET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", dest, dest, dest)
	all, _ := io.ReadAll(c)
	if !strings.Contains(string(all), "200 Connection Established") || !strings.HasSuffix(string(all), "hello") {
		t.Errorf("allowed tunnel: %q", all)
	}
	blocked, refused := g.Blocked()
	// Go's client retries the GET whose connection closed unanswered once.
	if refused < 3 || len(blocked) != refused {
		t.Errorf("blocked %v (%d)", blocked, refused)
	}
	if hits.Load() != 2 {
		t.Errorf("allowed host got %d requests", hits.Load())
	}
}
