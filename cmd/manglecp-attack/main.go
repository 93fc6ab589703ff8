// Command manglecp-attack plays hostile clients against a MangleCP server
// on loopback (scripts/attack.sh runs it; see docs/RELIABILITY.md):
//
//	manglecp-attack -mode http -url http://127.0.0.1:8080 -c 20 -size 4194304 -d 10s -pid PID
//	manglecp-attack -mode ws -url ... -c 4 -size 4194304 -d 10s -pid PID
//	manglecp-attack -mode ws-auth -url ... -token T -c 4 -d 10s -pid PID
//	manglecp-attack -mode drain -url ... -token T -pid PID -c 16 -ws 8 -term-after 3s
//
// http: c connections POST a request whose version string is size bytes,
// without credentials. ws: c WebSocket sessions that never read send such
// requests as frames. ws-auth: c authenticated sessions that never read
// send small valid requests. drain: c HTTP and ws WebSocket clients send
// valid requests; after term-after the server (pid) gets SIGTERM; the
// command reports answered and unanswered requests and how long the server
// took to exit. With -pid, the server's peak and current RSS are printed
// (Linux /proc). Only loopback URLs are accepted.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/manglecp/manglecp/cmd/internal/attack"
)

func main() {
	mode := flag.String("mode", "http", "http, ws, ws-auth or drain")
	base := flag.String("url", "http://127.0.0.1:8080", "the server's base URL (loopback only)")
	token := flag.String("token", "", "credentials for ws-auth and drain")
	conns := flag.Int("c", 20, "connections (http, ws, ws-auth) or HTTP clients (drain)")
	wsClients := flag.Int("ws", 8, "WebSocket clients (drain)")
	size := flag.Int("size", 4<<20, "bytes of the version string (http, ws)")
	d := flag.Duration("d", 10*time.Second, "how long the attack runs (drain: the most it waits for the server to exit)")
	pid := flag.Int("pid", 0, "the server's process id: report its RSS; drain sends it SIGTERM")
	termAfter := flag.Duration("term-after", 3*time.Second, "drain: send SIGTERM after this much steady load")
	flag.Parse()
	u, err := url.Parse(*base)
	if err != nil || !loopback(u.Hostname()) {
		fmt.Fprintln(os.Stderr, "manglecp-attack: -url must be a loopback http URL")
		os.Exit(2)
	}
	ws := "ws" + strings.TrimPrefix(strings.TrimSuffix(*base, "/"), "http") + "/manglecp/ws"
	var c attack.Counts
	start := time.Now()
	switch *mode {
	case "http":
		ctx, cancel := context.WithTimeout(context.Background(), *d)
		defer cancel()
		attack.HTTPFlood(ctx, *base, *conns, attack.HugeVersionRequest(*size), "", &c)
	case "ws":
		frame := attack.HugeVersionRequest(*size)
		ctx, cancel := context.WithTimeout(context.Background(), *d)
		defer cancel()
		attack.WSNoRead(ctx, ws, *conns, "", func(int) []byte { return frame }, &c)
	case "ws-auth":
		ctx, cancel := context.WithTimeout(context.Background(), *d)
		defer cancel()
		attack.WSNoRead(ctx, ws, *conns, *token, func(i int) []byte { return attack.ValidRequest("n" + strconv.Itoa(i)) }, &c)
	case "drain":
		if *pid <= 0 || *token == "" {
			fmt.Fprintln(os.Stderr, "manglecp-attack: drain needs -pid and -token")
			os.Exit(2)
		}
		drain(*base, ws, *token, *conns, *wsClients, *pid, *termAfter, *d, &c)
		return
	default:
		fmt.Fprintln(os.Stderr, "manglecp-attack: unknown -mode", *mode)
		os.Exit(2)
	}
	fmt.Printf("%s: %d connections, %s\n", *mode, *conns, time.Since(start).Round(time.Millisecond))
	fmt.Printf("  %s\n", c.String())
	if *pid > 0 {
		fmt.Printf("  server RSS: peak %s, now %s\n", procStatus(*pid, "VmHWM"), procStatus(*pid, "VmRSS"))
	}
}

// drain runs steady traffic, sends SIGTERM and waits for the server to exit.
func drain(base, ws, token string, httpClients, wsClients, pid int, termAfter, limit time.Duration, c *attack.Counts) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		attack.Steady(ctx, base, ws, token, httpClients, wsClients, c)
		close(done)
	}()
	time.Sleep(termAfter)
	before := c.Answered.Load()
	term := time.Now()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		fmt.Fprintln(os.Stderr, "manglecp-attack: SIGTERM:", err)
		os.Exit(1)
	}
	exited := false
	for time.Since(term) < limit {
		if gone(pid) {
			exited = true
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(term)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cancel()
		<-done
	}
	fmt.Printf("drain: %d HTTP clients, %d WebSocket clients, SIGTERM after %s\n", httpClients, wsClients, termAfter)
	fmt.Printf("  answered before SIGTERM %d, after %d\n", before, c.Answered.Load()-before)
	fmt.Printf("  %s\n", c.String())
	if f := c.Failures(); len(f) > 0 {
		fmt.Printf("  why HTTP requests got no answer: %v\n", f)
	}
	if exited {
		fmt.Printf("  the server exited %s after SIGTERM\n", took.Round(time.Millisecond))
	} else {
		fmt.Printf("  the server had not exited %s after SIGTERM\n", took.Round(time.Millisecond))
	}
}

// gone reports whether process pid ended (absent, or a zombie not yet
// reaped by its parent).
func gone(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	if i := strings.LastIndexByte(string(raw), ')'); i > 0 && len(raw) > i+2 {
		return raw[i+2] == 'Z' || raw[i+2] == 'X'
	}
	return false
}

// procStatus is one field of /proc/PID/status, e.g. "VmHWM".
func procStatus(pid int, field string) string {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
