// Package attack plays hostile MangleCP clients against a server on
// loopback, for scripts/attack.sh (through cmd/manglecp-attack) and the
// tests that hold the server's memory under a bound (issue 9): HTTP
// requests with a huge version string sent without credentials, WebSocket
// sessions that never read, and steady traffic while the server drains.
// Every attack runs until its context ends.
package attack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Counts are what a hostile client saw.
type Counts struct {
	// Sent requests (HTTP) or frames (WebSocket) written in full or in part.
	Sent atomic.Int64
	// Answered requests got an envelope back.
	Answered atomic.Int64
	// Unanswered requests were sent on an open connection and got no
	// answer (the connection ended first).
	Unanswered atomic.Int64
	// Refused connections could not be opened (the listener was closed or
	// the per-IP limit closed them at once).
	Refused atomic.Int64
	// CrossedClose requests were sent on a WebSocket session whose close
	// frame (1000 or 1001) was already on its way: the server never read
	// them (they are safe to retry elsewhere).
	CrossedClose atomic.Int64
	// Sessions opened; SessionsClosedCleanly ended with a close frame of
	// status 1000 or 1001, SessionsCut ended without one.
	Sessions              atomic.Int64
	SessionsClosedCleanly atomic.Int64
	SessionsCut           atomic.Int64

	mu       sync.Mutex
	codes    map[string]int64
	failures map[string]int64
}

func (c *Counts) code(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.codes == nil {
		c.codes = map[string]int64{}
	}
	c.codes[s]++
}

// failure records why a request got no answer.
func (c *Counts) failure(err error) {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failures == nil {
		c.failures = map[string]int64{}
	}
	c.failures[msg]++
}

// Failures returns why requests got no answer (the end of each error
// message), and how often.
func (c *Counts) Failures() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.failures))
	for k, v := range c.failures {
		out[k] = v
	}
	return out
}

// Codes returns how often each answer type or error code was seen.
func (c *Counts) Codes() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.codes))
	for k, v := range c.codes {
		out[k] = v
	}
	return out
}

// String summarises the counts on one line.
func (c *Counts) String() string {
	return fmt.Sprintf("sent %d, answered %d, unanswered %d, crossed a close frame %d, refused connections %d, sessions %d (closed cleanly %d, cut %d), answers %v",
		c.Sent.Load(), c.Answered.Load(), c.Unanswered.Load(), c.CrossedClose.Load(), c.Refused.Load(), c.Sessions.Load(),
		c.SessionsClosedCleanly.Load(), c.SessionsCut.Load(), c.Codes())
}

// classify records an answer body: the envelope type, or the error code.
func (c *Counts) classify(raw []byte) {
	var env struct {
		Type    string `json:"type"`
		Payload struct {
			Code string `json:"code"`
		} `json:"payload"`
	}
	if json.Unmarshal(raw, &env) != nil {
		c.code("not-an-envelope")
		return
	}
	c.Answered.Add(1)
	if env.Type == "error" {
		c.code(env.Payload.Code)
		return
	}
	c.code(env.Type)
}

// HugeVersionRequest is an intent_request whose "manglecp" version string
// is size bytes long.
func HugeVersionRequest(size int) []byte {
	var b bytes.Buffer
	b.Grow(size + 200)
	b.WriteString(`{"type":"intent_request","id":"huge","manglecp":"`)
	b.WriteString(strings.Repeat("v", size))
	b.WriteString(`","payload":{"intent":{"name":"observe"},"facts":[]}}`)
	return b.Bytes()
}

// ValidRequest is a small intent_request the browser domain answers.
func ValidRequest(id string) []byte {
	return []byte(`{"type":"intent_request","id":"` + id + `","manglecp":"2026-02-draft","payload":{"intent":{"name":"observe"},` +
		`"facts":[{"pred":"current_url","args":["https://app.example.com/"]}]}}`)
}

// HTTPFlood runs conns clients that each POST body to base+"/manglecp/evaluate"
// over and over, with token as bearer credentials when it is not empty.
// The body is shared, so the attacker itself holds it once.
func HTTPFlood(ctx context.Context, base string, conns int, body []byte, token string, c *Counts) {
	tr := &http.Transport{MaxConnsPerHost: conns, MaxIdleConnsPerHost: conns, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/manglecp/evaluate", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				c.Sent.Add(1)
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						countFailure(err, c)
						time.Sleep(10 * time.Millisecond)
					}
					continue
				}
				raw, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					c.Unanswered.Add(1)
					continue
				}
				c.classify(raw)
			}
		}()
	}
	wg.Wait()
}

// countFailure sorts a failed HTTP exchange: a refused connection, or a
// request that got no answer.
func countFailure(err error, c *Counts) {
	if isRefused(err) {
		c.Refused.Add(1)
		return
	}
	c.Unanswered.Add(1)
}

// WSNoRead runs sessions WebSocket clients that never read what the server
// sends: each writes frame after frame (frame(i) gives the i-th) until a
// write fails, then reconnects. With token set, the upgrade request
// carries it as bearer credentials.
func WSNoRead(ctx context.Context, wsURL string, sessions int, token string, frame func(i int) []byte, c *Counts) {
	var wg sync.WaitGroup
	for range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				noReadSession(ctx, wsURL, token, frame, c)
			}
		}()
	}
	wg.Wait()
}

func noReadSession(ctx context.Context, wsURL, token string, frame func(i int) []byte, c *Counts) {
	opts := &websocket.DialOptions{}
	if token != "" {
		opts.HTTPHeader = http.Header{"Authorization": {"Bearer " + token}}
	}
	conn, _, err := websocket.Dial(ctx, wsURL, opts)
	if err != nil {
		if ctx.Err() == nil {
			c.Refused.Add(1)
			time.Sleep(10 * time.Millisecond)
		}
		return
	}
	c.Sessions.Add(1)
	defer conn.CloseNow()
	conn.SetReadLimit(-1)
	for i := 0; ctx.Err() == nil; i++ {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := conn.Write(wctx, websocket.MessageText, frame(i))
		cancel()
		if err != nil {
			c.SessionsCut.Add(1)
			return
		}
		c.Sent.Add(1)
	}
}

// Steady runs httpClients HTTP clients (keep-alive) and wsClients
// WebSocket sessions that send valid requests one after another with token
// and read every answer, until ctx ends or the server is gone (a client
// stops at its first refused connection). It counts what a drain does to
// them: answered, unanswered, refused, and how sessions ended.
func Steady(ctx context.Context, base, wsURL, token string, httpClients, wsClients int, c *Counts) {
	var wg sync.WaitGroup
	tr := &http.Transport{MaxIdleConnsPerHost: httpClients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	for w := range httpClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/manglecp/evaluate",
					bytes.NewReader(ValidRequest(fmt.Sprintf("h%d-%d", w, i))))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+token)
				c.Sent.Add(1)
				resp, err := client.Do(req)
				if err != nil {
					c.Sent.Add(-1)
					if ctx.Err() != nil {
						return
					}
					if isRefused(err) { // the listener is closed: the server is gone
						c.Refused.Add(1)
						return
					}
					c.Sent.Add(1)
					c.Unanswered.Add(1)
					c.failure(err)
					continue
				}
				raw, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					c.Unanswered.Add(1)
					c.failure(err)
					continue
				}
				c.classify(raw)
			}
		}()
	}
	for w := range wsClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			steadySession(ctx, wsURL, token, w, c)
		}()
	}
	wg.Wait()
}

func isRefused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// steadySession sends one request at a time and reads until its answer,
// skipping pushed manifests; a close frame ends it.
func steadySession(ctx context.Context, wsURL, token string, w int, c *Counts) {
	conn, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		if ctx.Err() == nil {
			c.Refused.Add(1)
		}
		return
	}
	c.Sessions.Add(1)
	defer conn.CloseNow()
	conn.SetReadLimit(-1)
	ended := func(err error) {
		switch websocket.CloseStatus(err) {
		case websocket.StatusNormalClosure, websocket.StatusGoingAway:
			c.SessionsClosedCleanly.Add(1)
		default:
			if ctx.Err() == nil {
				c.SessionsCut.Add(1)
			}
		}
	}
	if _, _, err := conn.Read(ctx); err != nil { // the manifest
		ended(err)
		return
	}
	for i := 0; ctx.Err() == nil; i++ {
		id := fmt.Sprintf("w%d-%d", w, i)
		if err := conn.Write(ctx, websocket.MessageText, ValidRequest(id)); err != nil {
			ended(err)
			return
		}
		c.Sent.Add(1)
		for {
			_, raw, err := conn.Read(ctx)
			if err != nil {
				switch st := websocket.CloseStatus(err); {
				case ctx.Err() != nil:
					c.Sent.Add(-1)
				case st == websocket.StatusNormalClosure || st == websocket.StatusGoingAway:
					c.CrossedClose.Add(1)
				default:
					c.Unanswered.Add(1)
				}
				ended(err)
				return
			}
			if bytes.Contains(raw, []byte(`"id":"`+id+`"`)) {
				c.classify(raw)
				break
			}
		}
	}
}
