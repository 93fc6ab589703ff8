// Package load is a load harness for MangleCP servers: it drives a mix of
// valid evaluations, invocations, invalid requests and oversize messages
// over HTTP, WebSocket or stdio for a fixed time at a fixed concurrency,
// and reports throughput, latency percentiles, status counts, memory and
// goroutines. cmd/manglecp-load is its command; scripts/load.sh runs it.
package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// Config describes one run.
type Config struct {
	Transport   string        // http, ws or stdio
	Concurrency int           // clients (connections for ws and stdio)
	Duration    time.Duration // how long to send
	Pipeline    int           // requests in flight per ws/stdio client; default 1
	Mix         string        // "evaluate" (valid evaluations only), "mixed" or "evaluate-invoke"
	// Target, when set, is the base URL of a running server or load
	// balancer (http://HOST:PORT) to drive instead of an in-process server;
	// the transport must be http.
	Target string
	// MaxMessageBytes of the in-process server; oversize messages are one
	// byte more. Default 1 MiB (the CLI insists on 16 MiB; the harness
	// uses less so oversize traffic stays cheap).
	MaxMessageBytes int64
}

// Kind is a kind of request of the mix, with the status it must get.
type Kind struct {
	Name   string
	Expect string // "ok" or a registry code
}

// Report is the outcome of a run.
type Report struct {
	Config            Config
	Requests          int64
	RequestsPerSecond float64
	P50, P99, Max     time.Duration
	// Outcomes counts answers by "kind -> got"; Unexpected counts answers
	// that were not what the kind expects (including transport errors).
	Outcomes   map[string]int64
	Unexpected int64
	// CrossReplica counts invocations (mix evaluate-invoke) answered by
	// another replica than the one that evaluated the macro-tool, as told
	// by the X-Served-By response header a load balancer adds.
	CrossReplica     int64
	GoroutinesBefore int
	GoroutinesAfter  int
	PeakRSSBytes     int64
	// HeapAfterWarmupBytes and HeapAtEndBytes are the live heap (after a
	// collection): a sixth into the run, with every client's request in
	// flight, and once the clients have stopped, with the server and its
	// caches still up (what the run left behind).
	HeapAfterWarmupBytes uint64
	HeapAtEndBytes       uint64
}

// liveHeap is the heap that survives a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

var kinds = []Kind{
	{"evaluate", "ok"},
	{"invoke", "ok"},
	{"bad_facts", string(protocol.CodeArityMismatch)},
	{"oversize", string(protocol.CodeMessageTooLarge)},
}

// requestFor builds the message of a kind. invoke needs a macro_id.
func requestFor(k Kind, id, macroID string, limit int64) []byte {
	var env *protocol.Envelope
	switch k.Name {
	case "evaluate":
		env, _ = protocol.NewEnvelope(protocol.TypeIntentRequest, id, evaluateRequest())
	case "invoke":
		env, _ = protocol.NewEnvelope(protocol.TypeInvokeRequest, id, map[string]any{"macro_id": macroID, "args": map[string]any{"request_id": "r42"}})
	case "bad_facts":
		env, _ = protocol.NewEnvelope(protocol.TypeIntentRequest, id, map[string]any{
			"intent": map[string]any{"name": "observe"},
			"facts":  []any{map[string]any{"pred": "current_url", "args": []any{1, 2}}}})
	case "oversize":
		raw := fmt.Sprintf(`{"type":"intent_request","id":%q,"manglecp":"2026-02-draft","payload":{"intent":{"name":"observe"},"facts":[{"pred":"current_url","args":["%s"]}]}}`,
			id, strings.Repeat("x", int(limit)))
		return []byte(raw)
	}
	raw, _ := env.Encode()
	return raw
}

func evaluateRequest() map[string]any {
	return map[string]any{
		"intent": map[string]any{"name": "diagnose_error"},
		"facts": []any{
			map[string]any{"pred": "current_url", "args": []any{"https://app.example.com/dashboard"}},
			map[string]any{"pred": "console_event", "args": []any{"s1", "error", "TypeError: x is null", 1771511400000}},
			map[string]any{"pred": "net_request", "args": []any{"s1", "r42", "GET", "https://api.example.com/users", 1771511399000}},
			map[string]any{"pred": "net_response", "args": []any{"s1", "r42", 404, 1771511399500}},
		},
		"eval_time": "2026-02-19T14:30:05Z",
	}
}

// outcome classifies an answer: "ok" or the error code.
func outcome(raw []byte) (typ protocol.MessageType, got string, id string) {
	var env struct {
		Type    protocol.MessageType `json:"type"`
		ID      *string              `json:"id"`
		Payload struct {
			Code string `json:"code"`
		} `json:"payload"`
	}
	if json.Unmarshal(raw, &env) != nil {
		return "", "unparseable", ""
	}
	if env.ID != nil {
		id = *env.ID
	}
	if env.Type == protocol.TypeError {
		return env.Type, env.Payload.Code, id
	}
	return env.Type, "ok", id
}

// exchanger sends one message and returns the answer for its id.
type exchanger interface {
	exchange(ctx context.Context, path string, id string, msg []byte) ([]byte, error)
	close()
}

// Run starts an in-process server behind the transport and drives it.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Pipeline <= 0 {
		cfg.Pipeline = 1
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = 1 << 20
	}
	dir, err := os.MkdirTemp("", "manglecp-load")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	runtime.GC()
	rep := &Report{Config: cfg, Outcomes: map[string]int64{}, GoroutinesBefore: runtime.NumGoroutine()}
	var srv *manglecp.Server
	var httpSrv *http.Server
	var base, wsURL string
	if cfg.Mix == "evaluate-invoke" && cfg.Transport != "http" {
		return nil, fmt.Errorf("-mix evaluate-invoke needs -transport http")
	}
	if cfg.Target != "" {
		if cfg.Transport != "http" {
			return nil, fmt.Errorf("-target needs -transport http")
		}
		base = strings.TrimSuffix(cfg.Target, "/")
	} else {
		srv, err = manglecp.NewServer(browser.Domain(browser.Config{ReportDir: dir}), &manglecp.Options{
			Limits:                   manglecp.Limits{MaxMessageBytes: cfg.MaxMessageBytes},
			MaxConcurrentEvaluations: 64 * runtime.GOMAXPROCS(0), // measure the server, not the pool
			QueueTimeout:             time.Minute,
			// Measure the server, not its logging; the harness confirms nothing.
			Logger:          slog.New(slog.DiscardHandler),
			ConfirmationKey: []byte("manglecp-load confirms nothing"),
		})
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		httpSrv = &http.Server{Handler: transport.NewHTTPHandler(srv, nil), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = httpSrv.Serve(ln) }()
		base = "http://" + ln.Addr().String()
		wsURL = "ws://" + ln.Addr().String() + "/manglecp/ws"
	}
	var crossReplica atomic.Int64

	clients := make([]exchanger, cfg.Concurrency)
	for i := range clients {
		var c exchanger
		switch cfg.Transport {
		case "http":
			c = &httpClient{base: base, c: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
		case "ws":
			c, err = dialWS(ctx, wsURL, cfg.MaxMessageBytes)
		case "stdio":
			c = newStdioClient(ctx, srv)
		default:
			err = fmt.Errorf("unknown transport %q (http, ws or stdio)", cfg.Transport)
		}
		if err != nil {
			return nil, err
		}
		clients[i] = c
	}

	var (
		mu        sync.Mutex
		latencies []time.Duration
		requests  atomic.Int64
		peakRSS   atomic.Int64
		heapWarm  atomic.Uint64
	)
	stopSampling := make(chan struct{})
	samplerDone := make(chan struct{})
	go func() { // memory sampler
		defer close(samplerDone)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
				if rss := readRSS(); rss > peakRSS.Load() {
					peakRSS.Store(rss)
				}
				if heapWarm.Load() == 0 && time.Since(start) > cfg.Duration/6 {
					heapWarm.Store(liveHeap())
				}
			}
		}
	}()
	deadline := time.Now().Add(cfg.Duration)
	var wg sync.WaitGroup
	for w, c := range clients {
		for p := 0; p < cfg.Pipeline; p++ {
			wg.Add(1)
			go func(w, p int, c exchanger) {
				defer wg.Done()
				local := make([]time.Duration, 0, 4096)
				counts := map[string]int64{}
				var unexpected int64
				macroID := ""
				if cfg.Mix == "evaluate-invoke" {
					local, counts, unexpected := evaluateInvoke(ctx, base, w, deadline, &crossReplica)
					requests.Add(int64(len(local)))
					mu.Lock()
					latencies = append(latencies, local...)
					for key, v := range counts {
						rep.Outcomes[key] += v
					}
					rep.Unexpected += unexpected
					mu.Unlock()
					return
				}
				for n := 0; time.Now().Before(deadline) && ctx.Err() == nil; n++ {
					k := kinds[0]
					if cfg.Mix == "mixed" {
						k = kinds[n%len(kinds)]
						if cfg.Transport != "http" && k.Name == "oversize" {
							k = kinds[0] // an oversize frame ends a WebSocket session; measured on HTTP
						}
					}
					if k.Name == "invoke" && macroID == "" {
						k = kinds[0]
					}
					id := fmt.Sprintf("c%d-%d-%d", w, p, n)
					path := "/manglecp/evaluate"
					if k.Name == "invoke" {
						path = "/manglecp/invoke"
					}
					start := time.Now()
					raw, err := c.exchange(ctx, path, id, requestFor(k, id, macroID, cfg.MaxMessageBytes))
					local = append(local, time.Since(start))
					got := "transport_error"
					if err == nil {
						var typ protocol.MessageType
						var rid string
						typ, got, rid = outcome(raw)
						if typ == protocol.TypeIntentResponse && macroID == "" {
							macroID = firstMacro(raw)
						}
						if rid != id && k.Name != "oversize" {
							got = "wrong_id"
						}
					}
					counts[k.Name+" -> "+got]++
					if got != k.Expect {
						unexpected++
					}
				}
				requests.Add(int64(len(local)))
				mu.Lock()
				latencies = append(latencies, local...)
				for key, v := range counts {
					rep.Outcomes[key] += v
				}
				rep.Unexpected += unexpected
				mu.Unlock()
			}(w, p, c)
		}
	}
	wg.Wait()
	elapsed := cfg.Duration
	close(stopSampling)
	<-samplerDone
	rep.HeapAtEndBytes = liveHeap()
	rep.HeapAfterWarmupBytes = heapWarm.Load()
	for _, c := range clients {
		c.close()
	}
	if httpSrv != nil {
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = httpSrv.Shutdown(shutdown)
		cancel()
	}
	rep.CrossReplica = crossReplica.Load()
	// Goroutines back to baseline: poll for up to 3 s after everything closed.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if runtime.NumGoroutine() <= rep.GoroutinesBefore {
			break
		}
	}
	rep.GoroutinesAfter = runtime.NumGoroutine()
	rep.Requests = requests.Load()
	rep.RequestsPerSecond = float64(rep.Requests) / elapsed.Seconds()
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	if n := len(latencies); n > 0 {
		rep.P50, rep.P99, rep.Max = latencies[n/2], latencies[(n*99)/100], latencies[n-1]
	}
	rep.PeakRSSBytes = peakRSS.Load()
	return rep, nil
}

func firstMacro(raw []byte) string {
	var env struct {
		Payload struct {
			MacroTools []struct {
				MacroID string `json:"macro_id"`
				Name    string `json:"name"`
			} `json:"macro_tools"`
		} `json:"payload"`
	}
	_ = json.Unmarshal(raw, &env)
	for _, m := range env.Payload.MacroTools {
		if m.Name == "diagnose_causal_chain" {
			return m.MacroID
		}
	}
	return ""
}

// readRSS reads the resident set size from /proc (0 where unavailable).
func readRSS() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

type httpClient struct {
	base string
	c    *http.Client
}

func (h *httpClient) exchange(ctx context.Context, path, _ string, msg []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+path, bytes.NewReader(msg))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

func (h *httpClient) close() { h.c.CloseIdleConnections() }

// sessionClient correlates answers by id over one session connection, so
// several requests can be in flight (pipelining).
type sessionClient struct {
	write   func(ctx context.Context, msg []byte) error
	closeFn func()
	mu      sync.Mutex
	waiting map[string]chan []byte
}

func newSessionClient(write func(context.Context, []byte) error, read func() ([]byte, error), closeFn func()) *sessionClient {
	s := &sessionClient{write: write, closeFn: closeFn, waiting: map[string]chan []byte{}}
	go func() {
		for {
			raw, err := read()
			if err != nil {
				s.mu.Lock()
				for id, ch := range s.waiting {
					close(ch)
					delete(s.waiting, id)
				}
				s.mu.Unlock()
				return
			}
			typ, _, id := outcome(raw)
			if typ == protocol.TypeManifest || typ == protocol.TypeProgress {
				continue
			}
			s.mu.Lock()
			ch := s.waiting[id]
			delete(s.waiting, id)
			s.mu.Unlock()
			if ch != nil {
				ch <- raw
			}
		}
	}()
	return s
}

func (s *sessionClient) exchange(ctx context.Context, _ string, id string, msg []byte) ([]byte, error) {
	ch := make(chan []byte, 1)
	s.mu.Lock()
	s.waiting[id] = ch
	s.mu.Unlock()
	if err := s.write(ctx, msg); err != nil {
		return nil, err
	}
	select {
	case raw, ok := <-ch:
		if !ok {
			return nil, io.ErrUnexpectedEOF
		}
		return raw, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *sessionClient) close() { s.closeFn() }

func dialWS(ctx context.Context, url string, limit int64) (*sessionClient, error) {
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(limit + 1<<20)
	var wmu sync.Mutex
	return newSessionClient(
		func(ctx context.Context, m []byte) error {
			wmu.Lock()
			defer wmu.Unlock()
			return c.Write(ctx, websocket.MessageText, m)
		},
		func() ([]byte, error) {
			_, b, err := c.Read(context.Background())
			return b, err
		},
		func() { _ = c.Close(websocket.StatusNormalClosure, "") }), nil
}

// newStdioClient serves one in-process stdio session over pipes.
func newStdioClient(ctx context.Context, srv *manglecp.Server) *sessionClient {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = transport.ServeSession(ctx, srv, transport.NewStdioConn(inR, outW, srv.MaxMessageBytes(), nil), nil)
		outW.Close()
	}()
	lines := bufio.NewReaderSize(outR, 1<<20)
	var wmu sync.Mutex
	return newSessionClient(
		func(_ context.Context, m []byte) error {
			wmu.Lock()
			defer wmu.Unlock()
			_, err := inW.Write(append(append([]byte(nil), m...), '\n'))
			return err
		},
		func() ([]byte, error) { return lines.ReadBytes('\n') },
		func() {
			inW.Close()
			<-done
			outR.Close()
		})
}

// Format renders a report as text.
func (r *Report) Format() string {
	var b strings.Builder
	fmt.Fprintf(&b, "transport=%s concurrency=%d pipeline=%d duration=%s mix=%s\n", r.Config.Transport, r.Config.Concurrency, r.Config.Pipeline, r.Config.Duration, r.Config.Mix)
	fmt.Fprintf(&b, "requests=%d rps=%.0f p50=%s p99=%s max=%s\n", r.Requests, r.RequestsPerSecond, r.P50.Round(10*time.Microsecond), r.P99.Round(10*time.Microsecond), r.Max.Round(10*time.Microsecond))
	keys := make([]string, 0, len(r.Outcomes))
	for k := range r.Outcomes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-40s %d\n", k, r.Outcomes[k])
	}
	if r.CrossReplica > 0 {
		fmt.Fprintf(&b, "invocations answered by another replica than the evaluating one: %d\n", r.CrossReplica)
	}
	fmt.Fprintf(&b, "unexpected=%d goroutines before=%d after=%d peak_rss=%.1fMiB heap_after_warmup=%.1fMiB heap_at_end=%.1fMiB\n",
		r.Unexpected, r.GoroutinesBefore, r.GoroutinesAfter, float64(r.PeakRSSBytes)/(1<<20), float64(r.HeapAfterWarmupBytes)/(1<<20), float64(r.HeapAtEndBytes)/(1<<20))
	return b.String()
}

// evaluateInvoke is one client of the evaluate-invoke mix: it evaluates
// with facts unique to the request (so every macro_id is new), then
// invokes the macro-tool over a second connection. Behind a round-robin
// load balancer the invocation usually reaches another replica than the
// evaluation; any macro_not_found means state is not shared.
func evaluateInvoke(ctx context.Context, base string, w int, deadline time.Time, cross *atomic.Int64) ([]time.Duration, map[string]int64, int64) {
	evalC := &httpClient{base: base, c: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}}
	invC := &httpClient{base: base, c: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}}
	defer evalC.close()
	defer invC.close()
	local := make([]time.Duration, 0, 4096)
	counts := map[string]int64{}
	var unexpected int64
	record := func(kind, got string, took time.Duration) {
		local = append(local, took)
		counts[kind+" -> "+got]++
		if got != "ok" {
			unexpected++
		}
	}
	for n := 0; time.Now().Before(deadline) && ctx.Err() == nil; n++ {
		rid := fmt.Sprintf("r%d-%d", w, n)
		id := "e" + rid
		req := evaluateRequest()
		req["facts"] = []any{
			map[string]any{"pred": "current_url", "args": []any{"https://app.example.com/dashboard"}},
			map[string]any{"pred": "console_event", "args": []any{"s1", "error", "TypeError: x is null", 1771511400000}},
			map[string]any{"pred": "net_request", "args": []any{"s1", rid, "GET", "https://api.example.com/users", 1771511399000}},
			map[string]any{"pred": "net_response", "args": []any{"s1", rid, 404, 1771511399500}},
		}
		env, _ := protocol.NewEnvelope(protocol.TypeIntentRequest, id, req)
		msg, _ := env.Encode()
		start := time.Now()
		raw, served, err := evalC.exchangeServed(ctx, "/manglecp/evaluate", msg)
		took := time.Since(start)
		got := "transport_error"
		macroID := ""
		if err == nil {
			var rid2 string
			_, got, rid2 = outcome(raw)
			if rid2 != id {
				got = "wrong_id"
			}
			macroID = firstMacro(raw)
			if got == "ok" && macroID == "" {
				got = "no_macro_tool"
			}
		}
		record("evaluate", got, took)
		if macroID == "" {
			continue
		}
		id = "i" + rid
		env, _ = protocol.NewEnvelope(protocol.TypeInvokeRequest, id, map[string]any{"macro_id": macroID, "args": map[string]any{"request_id": rid}})
		msg, _ = env.Encode()
		start = time.Now()
		raw, servedInv, err := invC.exchangeServed(ctx, "/manglecp/invoke", msg)
		took = time.Since(start)
		got = "transport_error"
		if err == nil {
			var rid2 string
			_, got, rid2 = outcome(raw)
			if rid2 != id {
				got = "wrong_id"
			}
			if served != "" && servedInv != "" && served != servedInv {
				cross.Add(1)
			}
		}
		record("invoke", got, took)
	}
	return local, counts, unexpected
}

// exchangeServed posts msg and returns the answer and the X-Served-By
// header (the replica, when a load balancer names it).
func (h *httpClient) exchangeServed(ctx context.Context, path string, msg []byte) ([]byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+path, bytes.NewReader(msg))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return raw, resp.Header.Get("X-Served-By"), err
}
