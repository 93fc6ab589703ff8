package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/manglecp/manglecp/internal/tailbuf"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// The suite talks to servers below the client library: it must send
// malformed bytes, see HTTP statuses and headers, see every frame and
// line, and never trust the server to correlate ids. This file holds that
// raw layer.

// maxReply bounds one message read from a server.
const maxReply = 256 << 20

// envelope is a server message decoded loosely: whatever the server sent,
// so that checks can judge it.
type envelope struct {
	Type    string
	ID      *string // nil for null or absent
	HasID   bool    // the "id" key was present
	Version string
	Payload json.RawMessage
}

// IDString returns the id or "" for null.
func (e *envelope) IDString() string {
	if e == nil || e.ID == nil {
		return ""
	}
	return *e.ID
}

// decodeLoose reads the envelope fields of raw without judging them.
func decodeLoose(raw []byte) (*envelope, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	env := &envelope{Payload: m["payload"]}
	_ = json.Unmarshal(m["type"], &env.Type)
	_ = json.Unmarshal(m["manglecp"], &env.Version)
	if idRaw, ok := m["id"]; ok {
		env.HasID = true
		var s string
		if string(bytes.TrimSpace(idRaw)) != "null" && json.Unmarshal(idRaw, &s) == nil {
			env.ID = &s
		}
	}
	return env, nil
}

// reply is one answer from a server, or the failure to get one.
type reply struct {
	// Status and Header are the HTTP status and headers (HTTP only).
	Status int
	Header http.Header
	// Raw is the message as received.
	Raw []byte
	// Env is Raw decoded loosely; nil when Raw is not a JSON object.
	Env *envelope
	// DecodeErr says why Raw is not an envelope.
	DecodeErr error
	// Err is a transport failure: no answer arrived.
	Err error
	// Elapsed is the time from sending to the answer.
	Elapsed time.Duration
}

func newReply(raw []byte) *reply {
	r := &reply{Raw: raw}
	r.Env, r.DecodeErr = decodeLoose(raw)
	return r
}

// is reports whether the reply is a message of type t.
func (r *reply) is(t protocol.MessageType) bool {
	return r != nil && r.Err == nil && r.Env != nil && r.Env.Type == string(t)
}

// describe summarizes the reply for a check's detail.
func (r *reply) describe() string {
	switch {
	case r == nil:
		return "no answer"
	case r.Err != nil:
		return "no answer: " + r.Err.Error()
	case r.Env == nil:
		return fmt.Sprintf("not a MangleCP envelope (%v): %s", r.DecodeErr, clip(r.Raw, 160))
	case r.Env.Type == string(protocol.TypeError):
		e := r.errorInfo()
		s := fmt.Sprintf("error %s: %s", e.Code, clip([]byte(e.Message), 120))
		if r.Status != 0 {
			s = fmt.Sprintf("HTTP %d %s", r.Status, s)
		}
		return s
	}
	s := r.Env.Type
	if r.Status != 0 {
		s = fmt.Sprintf("HTTP %d %s", r.Status, s)
	}
	return s
}

// errInfo is an error payload decoded loosely.
type errInfo struct {
	Code        string
	Message     string
	Recoverable *bool
	Details     map[string]any
	// Typed is the payload as protocol.Error (lenient decode), for the
	// typed details.
	Typed protocol.Error
	// Fields is the payload as a map, to judge presence and types.
	Fields map[string]any
}

// errorInfo decodes the payload of an error reply.
func (r *reply) errorInfo() *errInfo {
	e := &errInfo{}
	if r == nil || r.Env == nil {
		return e
	}
	_ = decodeNumbers(r.Env.Payload, &e.Fields)
	_ = decodeNumbers(r.Env.Payload, &e.Typed)
	e.Code, _ = e.Fields["code"].(string)
	e.Message, _ = e.Fields["message"].(string)
	if b, ok := e.Fields["recoverable"].(bool); ok {
		e.Recoverable = &b
	}
	e.Details, _ = e.Fields["details"].(map[string]any)
	return e
}

// decodeNumbers decodes JSON keeping numbers as json.Number and ignoring
// unknown fields.
func decodeNumbers(raw []byte, v any) error {
	if len(raw) == 0 {
		return errors.New("empty")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

func clip(b []byte, n int) string {
	return protocol.ClipN(strings.Join(strings.Fields(string(b)), " "), n)
}

// wire is one connection to the server under test.
type wire interface {
	// kind is "http", "websocket" or "stdio".
	kind() string
	// manifest is the manifest as the transport first delivered it.
	manifest() *reply
	// do sends one message and waits for the answer to id ("" when the
	// message has no readable id: the answer then has id null). Unless
	// strict, a session also takes an answer with id null as the answer.
	do(ctx context.Context, typ protocol.MessageType, msg []byte, id string, strict bool) *reply
	close() error
}

// ---- HTTP ----

// httpWire is the HTTP binding: the well-known manifest and POSTs to the
// endpoints it advertises, resolved against the manifest's URL.
type httpWire struct {
	client      *http.Client
	manifestURL *url.URL
	token       string
	first       *reply
	evalURL     string
	invokeURL   string
	endpointErr string // why the endpoints could not be resolved
}

func dialHTTP(ctx context.Context, u *url.URL, token string, client *http.Client) (*httpWire, error) {
	mu := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: transport.ManifestPath}
	if strings.HasSuffix(u.Path, "manifest.json") {
		mu = &url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawQuery: u.RawQuery}
	}
	w := &httpWire{client: client, manifestURL: mu, token: token}
	w.first = w.get(ctx, nil)
	if w.first.Err != nil {
		return nil, fmt.Errorf("GET %s: %w", mu, w.first.Err)
	}
	w.resolve(w.first)
	return w, nil
}

// resolve reads the endpoints of a manifest reply; without them it falls
// back to the well-known defaults so that other checks can still run.
func (w *httpWire) resolve(m *reply) {
	w.evalURL = w.manifestURL.ResolveReference(&url.URL{Path: "/manglecp/evaluate"}).String()
	w.invokeURL = w.manifestURL.ResolveReference(&url.URL{Path: "/manglecp/invoke"}).String()
	var p struct {
		Endpoints *struct {
			IntentEval  string `json:"intent_eval"`
			MacroInvoke string `json:"macro_invoke"`
		} `json:"endpoints"`
	}
	if m.Env == nil || json.Unmarshal(m.Env.Payload, &p) != nil || p.Endpoints == nil || p.Endpoints.IntentEval == "" || p.Endpoints.MacroInvoke == "" {
		w.endpointErr = "the manifest has no endpoints.intent_eval and endpoints.macro_invoke"
		return
	}
	ev, err1 := w.manifestURL.Parse(p.Endpoints.IntentEval)
	inv, err2 := w.manifestURL.Parse(p.Endpoints.MacroInvoke)
	if err := errors.Join(err1, err2); err != nil {
		w.endpointErr = "the endpoints are not URIs: " + err.Error()
		return
	}
	w.evalURL, w.invokeURL = ev.String(), inv.String()
}

func (w *httpWire) kind() string     { return "http" }
func (w *httpWire) manifest() *reply { return w.first }
func (w *httpWire) close() error     { return nil }

// header is the header of every request: JSON both ways and the token.
func (w *httpWire) header() http.Header {
	h := http.Header{}
	h.Set("Accept", "application/json")
	if w.token != "" {
		h.Set("Authorization", "Bearer "+w.token)
	}
	return h
}

// get fetches the manifest with extra headers (nil: the default ones).
func (w *httpWire) get(ctx context.Context, extra http.Header) *reply {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.manifestURL.String(), nil)
	if err != nil {
		return &reply{Err: err}
	}
	req.Header = w.header()
	for k, v := range extra {
		req.Header[k] = v
	}
	return w.send(req)
}

// post sends body to target with the default headers changed by extra
// (a key with no values removes the header).
func (w *httpWire) post(ctx context.Context, target string, body []byte, extra http.Header) *reply {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return &reply{Err: err}
	}
	req.Header = w.header()
	req.Header.Set("Content-Type", "application/json")
	for k, v := range extra {
		if len(v) == 0 {
			req.Header.Del(k)
			continue
		}
		req.Header[k] = v
	}
	return w.send(req)
}

func (w *httpWire) send(req *http.Request) *reply {
	start := time.Now()
	resp, err := w.client.Do(req)
	if err != nil {
		return &reply{Err: err, Elapsed: time.Since(start)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return &reply{Err: fmt.Errorf("reading the body (HTTP %d): %w", resp.StatusCode, err), Status: resp.StatusCode, Elapsed: time.Since(start)}
	}
	r := &reply{Raw: raw, Status: resp.StatusCode, Header: resp.Header, Elapsed: time.Since(start)}
	if len(raw) > 0 {
		r.Env, r.DecodeErr = decodeLoose(raw)
	} else {
		r.DecodeErr = errors.New("empty body")
	}
	return r
}

// endpoint is the URL of a message type.
func (w *httpWire) endpoint(typ protocol.MessageType) string {
	if typ == protocol.TypeInvokeRequest {
		return w.invokeURL
	}
	return w.evalURL
}

func (w *httpWire) do(ctx context.Context, typ protocol.MessageType, msg []byte, _ string, _ bool) *reply {
	return w.post(ctx, w.endpoint(typ), msg, nil)
}

// ---- session transports ----

// frameConn is one session's framing.
type frameConn interface {
	// read returns the next message and whether it was a text frame
	// (always true on stdio).
	read(ctx context.Context) ([]byte, bool, error)
	write(ctx context.Context, msg []byte) error
	close() error
}

// sessionMsg is one message a session received.
type sessionMsg struct {
	raw  []byte
	text bool
	env  *envelope // nil when not a JSON object
}

// sessionWire is a WebSocket or stdio session: the manifest first, then
// answers routed to waiting requests by id.
type sessionWire struct {
	k    string
	conn frameConn

	ctx    context.Context
	cancel context.CancelFunc
	wmu    sync.Mutex

	mu      sync.Mutex
	pending map[string]chan *reply
	first   *reply    // the first message
	mfirst  *reply    // the first manifest
	latest  *envelope // the latest manifest
	msgs    []sessionMsg
	stray   []string // ids of answers nobody waited for
	endErr  error

	firstCh chan struct{}
	nullCh  chan *reply // answers with id null
	done    chan struct{}
	stderr  *tailbuf.Buffer
}

func newSessionWire(ctx context.Context, k string, conn frameConn, stderr *tailbuf.Buffer) (*sessionWire, error) {
	lctx, cancel := context.WithCancel(context.Background())
	w := &sessionWire{k: k, conn: conn, ctx: lctx, cancel: cancel, pending: map[string]chan *reply{},
		firstCh: make(chan struct{}), nullCh: make(chan *reply, 256), done: make(chan struct{}), stderr: stderr}
	go w.readLoop()
	select {
	case <-w.firstCh:
		return w, nil
	case <-w.done:
		err := w.ended()
		_ = w.close()
		return nil, fmt.Errorf("the session ended before a manifest arrived: %w%s", err, w.stderrTail())
	case <-ctx.Done():
		_ = w.close()
		return nil, fmt.Errorf("no manifest arrived: %w%s", ctx.Err(), w.stderrTail())
	}
}

func (w *sessionWire) stderrTail() string {
	if w.stderr == nil {
		return ""
	}
	if s := strings.TrimSpace(w.stderr.String()); s != "" {
		return "; stderr: " + clip([]byte(s), 400)
	}
	return ""
}

func (w *sessionWire) kind() string { return w.k }

func (w *sessionWire) manifest() *reply {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mfirst
}

// firstMessage returns the first message of the session.
func (w *sessionWire) firstMessage() *reply {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first
}

// latestManifest returns the latest manifest payload the session received.
func (w *sessionWire) latestManifest() *envelope {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.latest
}

func (w *sessionWire) ended() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.endErr == nil {
		return errors.New("session closed")
	}
	return w.endErr
}

// messages returns a copy of every message received so far.
func (w *sessionWire) messages() []sessionMsg {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]sessionMsg(nil), w.msgs...)
}

// strayIDs returns the ids of answers no request waited for.
func (w *sessionWire) strayIDs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.stray...)
}

func (w *sessionWire) readLoop() {
	defer close(w.done)
	for {
		raw, text, err := w.conn.read(w.ctx)
		if err != nil {
			w.mu.Lock()
			w.endErr = err
			pending := w.pending
			w.pending = map[string]chan *reply{}
			w.mu.Unlock()
			for _, ch := range pending {
				ch <- &reply{Err: fmt.Errorf("the session ended: %w", err)}
			}
			return
		}
		r := newReply(raw)
		w.mu.Lock()
		w.msgs = append(w.msgs, sessionMsg{raw: raw, text: text, env: r.Env})
		if w.first == nil {
			w.first = r
		}
		if r.Env == nil {
			w.mu.Unlock()
			continue // noise: judged by the stdout and frame checks
		}
		switch protocol.MessageType(r.Env.Type) {
		case protocol.TypeManifest:
			w.latest = r.Env
			first := w.mfirst == nil
			if first {
				w.mfirst = r
			}
			w.mu.Unlock()
			if first {
				close(w.firstCh)
			}
			continue
		case protocol.TypeProgress:
			w.mu.Unlock()
			continue
		}
		if r.Env.ID == nil {
			w.mu.Unlock()
			select {
			case w.nullCh <- r:
			default:
			}
			continue
		}
		ch := w.pending[*r.Env.ID]
		delete(w.pending, *r.Env.ID)
		if ch == nil {
			w.stray = append(w.stray, *r.Env.ID)
		}
		w.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
}

// send writes one message.
func (w *sessionWire) send(ctx context.Context, msg []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return w.conn.write(ctx, msg)
}

// expect registers a waiter for the answer to id.
func (w *sessionWire) expect(id string) chan *reply {
	ch := make(chan *reply, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.endErr != nil {
		ch <- &reply{Err: fmt.Errorf("the session ended: %w", w.endErr)}
		return ch
	}
	w.pending[id] = ch
	return ch
}

// forget drops the waiter for id.
func (w *sessionWire) forget(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pending, id)
}

// await waits for the answer on ch (and, unless strict, an answer with id
// null), until ctx ends.
func (w *sessionWire) await(ctx context.Context, id string, ch chan *reply, strict bool, start time.Time) *reply {
	var nullCh chan *reply
	if !strict || id == "" {
		nullCh = w.nullCh
	}
	var r *reply
	select {
	case r = <-ch:
		if r.Err != nil && nullCh != nil {
			// The session ended; an answer with id null may have come
			// just before.
			select {
			case nr := <-nullCh:
				r = nr
			default:
			}
		}
	case r = <-nullCh:
		if id != "" {
			w.forget(id)
		}
	case <-ctx.Done():
		if id != "" {
			w.forget(id)
		}
		r = &reply{Err: fmt.Errorf("no answer to %q: %w", id, ctx.Err())}
	case <-w.done:
		// The reader failed the pending answers; one may already wait.
		select {
		case r = <-ch:
		default:
			r = &reply{Err: fmt.Errorf("the session ended: %w", w.ended())}
		}
	}
	r.Elapsed = time.Since(start)
	return r
}

func (w *sessionWire) do(ctx context.Context, _ protocol.MessageType, msg []byte, id string, strict bool) *reply {
	var ch chan *reply
	if id != "" {
		ch = w.expect(id)
	}
	start := time.Now()
	if err := w.send(ctx, msg); err != nil {
		if id != "" {
			w.forget(id)
		}
		return &reply{Err: fmt.Errorf("send: %w", err)}
	}
	return w.await(ctx, id, ch, strict, start)
}

func (w *sessionWire) close() error {
	err := w.conn.close()
	w.cancel()
	<-w.done
	return err
}

// wsConn frames messages as WebSocket frames.
type wsConn struct{ c *websocket.Conn }

func (c *wsConn) read(ctx context.Context) ([]byte, bool, error) {
	typ, data, err := c.c.Read(ctx)
	if err != nil {
		return nil, false, err
	}
	return data, typ == websocket.MessageText, nil
}

func (c *wsConn) write(ctx context.Context, msg []byte) error {
	return c.c.Write(ctx, websocket.MessageText, msg)
}

func (c *wsConn) close() error {
	done := make(chan struct{})
	go func() {
		_ = c.c.Close(websocket.StatusNormalClosure, "")
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		_ = c.c.CloseNow()
	}
	return nil
}

func dialWebSocket(ctx context.Context, u *url.URL, token string, client *http.Client) (*sessionWire, error) {
	if u.Path == "" || u.Path == "/" {
		u = &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/manglecp/ws", RawQuery: u.RawQuery}
	}
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	c, _, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPClient: client, HTTPHeader: h})
	if err != nil {
		return nil, fmt.Errorf("WebSocket %s: %w", u, err)
	}
	c.SetReadLimit(maxReply)
	return newSessionWire(ctx, "websocket", &wsConn{c: c}, nil)
}

// stdioConn frames messages as lines of a subprocess's stdin and stdout.
type stdioConn struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	once  sync.Once
}

func (c *stdioConn) read(context.Context) ([]byte, bool, error) {
	for {
		line, err := c.out.ReadBytes('\n')
		if len(line) > 0 && err == io.EOF {
			err = nil // a last line without newline
		}
		if err != nil {
			return nil, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 {
			return line, true, nil
		}
	}
}

func (c *stdioConn) write(_ context.Context, msg []byte) error {
	buf := make([]byte, 0, len(msg)+1)
	_, err := c.stdin.Write(append(append(buf, msg...), '\n'))
	return err
}

// close closes stdin and waits for the server to exit (killing it after
// 5 s).
func (c *stdioConn) close() error {
	var err error
	c.once.Do(func() {
		_ = c.stdin.Close()
		done := make(chan error, 1)
		go func() { done <- c.cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			_ = c.cmd.Process.Kill()
			err = <-done
		}
	})
	return err
}

func dialStdio(ctx context.Context, command string, token string, stderr io.Writer) (*sessionWire, error) {
	args := strings.Fields(command)
	if len(args) == 0 {
		return nil, errors.New("stdio: target names no command")
	}
	cmd := exec.Command(args[0], args[1:]...)
	if token != "" {
		cmd.Env = append(os.Environ(), "MANGLECP_AUTH_TOKEN="+token)
	}
	tail := tailbuf.New(4 << 10)
	cmd.Stderr = tail
	if stderr != nil {
		cmd.Stderr = io.MultiWriter(tail, stderr)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("stdio: %w", err)
	}
	conn := &stdioConn{cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 64<<10)}
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	w, err := newSessionWire(ctx, "stdio", conn, tail)
	stop()
	return w, err
}

// dialTarget connects to target: "http(s)://", "ws(s)://" or
// "stdio:COMMAND ARGS...".
func dialTarget(ctx context.Context, target, token string, o *Options) (wire, error) {
	if rest, ok := strings.CutPrefix(target, "stdio:"); ok {
		return dialStdio(ctx, rest, token, o.Stderr)
	}
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "http", "https":
		return dialHTTP(ctx, u, token, o.HTTPClient)
	case "ws", "wss":
		return dialWebSocket(ctx, u, token, o.HTTPClient)
	}
	return nil, fmt.Errorf("unsupported target %q: use http://, https://, ws://, wss:// or stdio:COMMAND", target)
}
