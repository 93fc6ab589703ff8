// Package lsp is a small Language Server Protocol client: it starts a
// language server (gopls, pyright, pylsp) as a child process over stdio,
// speaks JSON-RPC 2.0 with LSP's framing to it, keeps the diagnostics it
// publishes, and bounds it: its memory (a watchdog on its resident set,
// with the server's own soft limit), the time of each request, and the
// number of files of the root it is started on. A [Pool] starts servers
// lazily, one per root and language, and restarts one that crashed after
// a backoff.
//
// The client is its own (some 600 lines) rather than go.lsp.dev's
// packages, whose protocol package is a large generated API with logging
// and encoding dependencies, or golang.org/x/tools' jsonrpc2, which is
// internal to that module: the code domain needs a dozen requests.
//
// The package never reads or writes the files of a root itself: callers
// do that through os.Root and hand contents over. It turns URIs into paths
// and back; callers decide whether a path lies inside their root.
package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/manglecp/manglecp/internal/child"
)

// Defaults of a [Spec].
const (
	DefaultMaxMemory      = 2 << 30
	DefaultStartTimeout   = 60 * time.Second
	DefaultRequestTimeout = 30 * time.Second
	DefaultMemoryPoll     = time.Second
)

// Spec says how to run one language server.
type Spec struct {
	// Language names what the server serves ("go", "python").
	Language string
	// Name is the server's name for messages ("gopls").
	Name string
	// Command is the program and its arguments.
	Command []string
	// Env is added to the process's environment (KEY=VALUE).
	Env []string
	// InitializationOptions are sent with initialize.
	InitializationOptions any
	// Settings answer workspace/configuration, by section ("python",
	// "python.analysis", "gopls"); a section not here is answered null.
	Settings map[string]any
	// MaxMemory bounds the server's resident memory (its process group's
	// sum): over it, the server is killed. Default [DefaultMaxMemory].
	MaxMemory int64
	// StartTimeout bounds the start, up to the initialize answer. Default
	// [DefaultStartTimeout].
	StartTimeout time.Duration
	// RequestTimeout bounds each request. Default
	// [DefaultRequestTimeout].
	RequestTimeout time.Duration
	// Folders are the workspace folders (absolute directories below the
	// root) the server is told of; empty: the root alone. gopls makes one
	// view per folder: a root whose Go modules lie in subdirectories
	// names them here.
	Folders []string
	// ReadyMessage, when set, is text of a window/logMessage the server
	// sends once it has found the workspace's files (pyright logs "Found
	// N source files"): [Server.Ready] is closed then. Empty: ready once
	// initialized.
	ReadyMessage string
	// MemoryPoll is how often the resident memory is read. Default
	// [DefaultMemoryPoll].
	MemoryPoll time.Duration
}

func (s *Spec) defaults() {
	if s.MaxMemory <= 0 {
		s.MaxMemory = DefaultMaxMemory
	}
	if s.StartTimeout <= 0 {
		s.StartTimeout = DefaultStartTimeout
	}
	if s.RequestTimeout <= 0 {
		s.RequestTimeout = DefaultRequestTimeout
	}
	if s.MemoryPoll <= 0 {
		s.MemoryPoll = DefaultMemoryPoll
	}
	if s.Name == "" && len(s.Command) > 0 {
		s.Name = filepath.Base(s.Command[0])
	}
}

// Server is one running language server.
type Server struct {
	spec Spec
	root string // absolute
	proc *child.Process
	conn *Conn

	started time.Time
	ready   time.Duration // start to the initialize answer
	caps    json.RawMessage

	mu          sync.Mutex
	diags       map[string]published // by URI
	diagGen     uint64
	diagChanged chan struct{} // closed and replaced at every publish
	applied     []WorkspaceEdit
	firsts      map[string]bool
	killedFor   string // why the client killed it ("memory")

	ready0   chan struct{} // closed when the server has loaded the workspace
	readyOne sync.Once
	stop     chan struct{} // closed by Close
	stopOnce sync.Once
	wg       sync.WaitGroup
}

type published struct {
	gen   uint64
	diags []Diagnostic
}

// Start starts the server of spec on the directory root and initializes
// it. The process runs in its own process group, which Close kills.
func Start(ctx context.Context, spec Spec, root string) (*Server, error) {
	spec.defaults()
	if len(spec.Command) == 0 {
		return nil, errors.New("lsp: no command")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	s := &Server{spec: spec, root: abs, diags: map[string]published{}, diagChanged: make(chan struct{}),
		stop: make(chan struct{}), ready0: make(chan struct{})}
	if spec.ReadyMessage == "" {
		s.markReady()
	}
	s.started = time.Now()
	// Its own process group, killed should this process die; Close kills
	// the group (internal/child).
	proc, err := child.Start(child.Config{Command: spec.Command, Dir: abs, Env: append(os.Environ(), spec.Env...)})
	if err != nil {
		return nil, fmt.Errorf("lsp: start %s: %w", spec.Name, err)
	}
	s.proc = proc
	s.conn = NewConn(proc.Stdout, proc.Stdin, s.onRequest, s.onNotify)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.watchMemory()
	}()
	sctx, cancel := context.WithTimeout(ctx, spec.StartTimeout)
	defer cancel()
	if err := s.initialize(sctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("lsp: initialize %s: %w%s", spec.Name, err, s.stderrSuffix())
	}
	s.ready = time.Since(s.started)
	return s, nil
}

func (s *Server) initialize(ctx context.Context) error {
	rootURI := FileURI(s.root)
	params := map[string]any{
		"processId":             os.Getpid(),
		"clientInfo":            map[string]any{"name": "manglecp"},
		"rootUri":               rootURI,
		"rootPath":              s.root,
		"workspaceFolders":      s.folders(),
		"initializationOptions": s.spec.InitializationOptions,
		"capabilities": map[string]any{
			"general": map[string]any{"positionEncodings": []string{"utf-16"}},
			"workspace": map[string]any{
				"applyEdit":              true,
				"configuration":          true,
				"workspaceFolders":       true,
				"symbol":                 map[string]any{},
				"executeCommand":         map[string]any{},
				"didChangeWatchedFiles":  map[string]any{"dynamicRegistration": true},
				"didChangeConfiguration": map[string]any{"dynamicRegistration": true},
				"workspaceEdit": map[string]any{
					"documentChanges":    true,
					"resourceOperations": []string{"create", "rename", "delete"},
				},
				"fileOperations": map[string]any{"willRename": true, "didRename": true},
			},
			"textDocument": map[string]any{
				"synchronization":    map[string]any{"didSave": true},
				"publishDiagnostics": map[string]any{"versionSupport": true},
				"rename":             map[string]any{"prepareSupport": true},
				"references":         map[string]any{},
				"definition":         map[string]any{},
				"documentSymbol":     map[string]any{"hierarchicalDocumentSymbolSupport": true},
				"codeAction": map[string]any{
					"codeActionLiteralSupport": map[string]any{
						"codeActionKind": map[string]any{"valueSet": []string{"", "quickfix", "refactor", "source", "source.organizeImports"}},
					},
				},
			},
			"window": map[string]any{"workDoneProgress": true},
		},
	}
	var res json.RawMessage
	if err := s.conn.Call(ctx, "initialize", params, &res); err != nil {
		return err
	}
	var init struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	_ = json.Unmarshal(res, &init)
	s.caps = init.Capabilities
	if err := s.conn.Notify("initialized", map[string]any{}); err != nil {
		return err
	}
	if len(s.spec.Settings) > 0 {
		_ = s.conn.Notify("workspace/didChangeConfiguration", map[string]any{"settings": nest(s.spec.Settings)})
	}
	return nil
}

// folders are the workspace folders of initialize: Spec.Folders, or the
// root.
func (s *Server) folders() []map[string]any {
	dirs := s.spec.Folders
	if len(dirs) == 0 {
		dirs = []string{s.root}
	}
	out := make([]map[string]any, 0, len(dirs))
	for _, d := range dirs {
		out = append(out, map[string]any{"uri": FileURI(d), "name": filepath.Base(d)})
	}
	return out
}

// nest turns dotted sections ("python.analysis") into nested objects.
func nest(flat map[string]any) map[string]any {
	out := map[string]any{}
	for section, v := range flat {
		m := out
		parts := splitDots(section)
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		last := parts[len(parts)-1]
		if existing, ok := m[last].(map[string]any); ok {
			if vm, ok := v.(map[string]any); ok {
				for k, x := range vm {
					existing[k] = x
				}
				continue
			}
		}
		m[last] = v
	}
	return out
}

func splitDots(s string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// Capabilities are the server's capabilities, as it answered initialize.
func (s *Server) Capabilities() json.RawMessage { return s.caps }

// HasCapability reports whether the server's capabilities hold key (a
// top-level field such as "diagnosticProvider") with a value other than
// false or null.
func (s *Server) HasCapability(key string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(s.caps, &m) != nil {
		return false
	}
	v, ok := m[key]
	return ok && string(v) != "false" && string(v) != "null"
}

// Spec is the server's specification, with defaults filled in.
func (s *Server) Spec() Spec { return s.spec }

// Root is the absolute directory the server was started on.
func (s *Server) Root() string { return s.root }

// Age is how long ago the server's process started.
func (s *Server) Age() time.Duration { return time.Since(s.started) }

// StartTime is how long the server took from the start of its process to
// its answer to initialize.
func (s *Server) StartTime() time.Duration { return s.ready }

// Done is closed when the server's process has exited.
func (s *Server) Done() <-chan struct{} { return s.proc.Done() }

// Exited reports whether the process has exited, and why.
func (s *Server) Exited() (bool, string) {
	select {
	case <-s.proc.Done():
	default:
		return false, ""
	}
	s.mu.Lock()
	why := s.killedFor
	s.mu.Unlock()
	if why == "" {
		why = "exited"
		if err := s.proc.Err(); err != nil {
			why = err.Error()
		}
		why += s.stderrSuffix()
	}
	return true, why
}

// Call sends a request and decodes its answer into result, within the
// spec's request timeout.
func (s *Server) Call(ctx context.Context, method string, params, result any) error {
	ctx, cancel := context.WithTimeout(ctx, s.spec.RequestTimeout)
	defer cancel()
	err := s.conn.Call(ctx, method, params, result)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("lsp: %s: %s did not answer within %s: %w", method, s.spec.Name, s.spec.RequestTimeout, err)
	}
	if errors.Is(err, ErrClosed) {
		if gone, why := s.Exited(); gone {
			return fmt.Errorf("lsp: %s: %s %s: %w", method, s.spec.Name, why, ErrClosed)
		}
	}
	return err
}

// Notify sends a notification.
func (s *Server) Notify(method string, params any) error {
	return s.conn.Notify(method, params)
}

// RSS is the resident memory of the server's process and its children,
// in bytes (0 where it cannot be read).
func (s *Server) RSS() int64 {
	return s.proc.TreeRSS()
}

func (s *Server) watchMemory() {
	t := time.NewTicker(s.spec.MemoryPoll)
	defer t.Stop()
	for {
		select {
		case <-s.proc.Done():
			return
		case <-s.stop:
			return
		case <-t.C:
			if rss := s.RSS(); rss > s.spec.MaxMemory {
				s.mu.Lock()
				s.killedFor = fmt.Sprintf("was stopped: its memory (%d MiB) exceeded the limit of %d MiB", rss>>20, s.spec.MaxMemory>>20)
				s.mu.Unlock()
				s.proc.Kill()
				return
			}
		}
	}
}

// Close asks the server to shut down, waits a moment, kills its process
// group, and waits for every goroutine of the server.
func (s *Server) Close() error {
	s.stopOnce.Do(func() {
		close(s.stop)
		select {
		case <-s.proc.Done():
		default:
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if s.conn.Call(ctx, "shutdown", nil, nil) == nil {
				_ = s.conn.Notify("exit", nil)
			}
			cancel()
			select {
			case <-s.proc.Done():
			case <-time.After(time.Second):
			}
		}
		// The group may hold children of the server even after it exited.
		s.proc.Kill()
		s.proc.Stop()
		s.conn.Close()
		s.wg.Wait()
	})
	return nil
}

func (s *Server) onRequest(method string, params json.RawMessage) (any, error) {
	switch method {
	case "workspace/configuration":
		var p struct {
			Items []struct {
				Section string `json:"section"`
			} `json:"items"`
		}
		_ = json.Unmarshal(params, &p)
		out := make([]any, len(p.Items))
		nested := nest(s.spec.Settings)
		for i, it := range p.Items {
			if v, ok := s.spec.Settings[it.Section]; ok {
				out[i] = v
				continue
			}
			var cur any = nested
			for _, part := range splitDots(it.Section) {
				m, ok := cur.(map[string]any)
				if !ok {
					cur = nil
					break
				}
				cur = m[part]
			}
			out[i] = cur
		}
		return out, nil
	case "workspace/workspaceFolders":
		return s.folders(), nil
	case "window/workDoneProgress/create", "client/registerCapability", "client/unregisterCapability",
		"window/showMessageRequest", "window/showDocument", "workspace/codeLens/refresh",
		"workspace/semanticTokens/refresh", "workspace/inlayHint/refresh", "workspace/diagnostic/refresh":
		return nil, nil
	case "workspace/applyEdit":
		// A command (pyright's organize imports) hands its edit back to
		// the client; it is kept for the caller to preview, never written.
		var p struct {
			Edit WorkspaceEdit `json:"edit"`
		}
		if err := json.Unmarshal(params, &p); err == nil {
			s.mu.Lock()
			s.applied = append(s.applied, p.Edit)
			s.mu.Unlock()
		}
		return map[string]any{"applied": false, "failureReason": "the client previews edits before applying them"}, nil
	}
	return nil, &ResponseError{Code: -32601, Message: "method not found"}
}

func (s *Server) markReady() { s.readyOne.Do(func() { close(s.ready0) }) }

// Ready is closed once the server has loaded its workspace (see
// Spec.ReadyMessage).
func (s *Server) Ready() <-chan struct{} { return s.ready0 }

func (s *Server) onNotify(method string, params json.RawMessage) {
	if method == "window/logMessage" && s.spec.ReadyMessage != "" {
		var p struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(params, &p) == nil && strings.Contains(p.Message, s.spec.ReadyMessage) {
			s.markReady()
		}
		return
	}
	if method != "textDocument/publishDiagnostics" {
		return
	}
	var p PublishDiagnosticsParams
	if err := json.Unmarshal(params, &p); err != nil {
		return
	}
	s.mu.Lock()
	s.diagGen++
	s.diags[p.URI] = published{gen: s.diagGen, diags: p.Diagnostics}
	close(s.diagChanged)
	s.diagChanged = make(chan struct{})
	s.mu.Unlock()
}

// First reports whether this is the first time it is called with key on
// this server (e.g. a request a server answers before it has loaded the
// workspace, as pyright answers its first workspace/symbol with nothing).
func (s *Server) First(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.firsts == nil {
		s.firsts = map[string]bool{}
	}
	if s.firsts[key] {
		return false
	}
	s.firsts[key] = true
	return true
}

// TakeAppliedEdits returns and forgets the edits the server asked the
// client to apply (workspace/applyEdit) since the last call.
func (s *Server) TakeAppliedEdits() []WorkspaceEdit {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.applied
	s.applied = nil
	return out
}

// DiagnosticsMark is a point in the sequence of published diagnostics.
type DiagnosticsMark uint64

// Mark is the current point; [Server.WaitDiagnostics] waits for
// diagnostics published after it.
func (s *Server) Mark() DiagnosticsMark {
	s.mu.Lock()
	defer s.mu.Unlock()
	return DiagnosticsMark(s.diagGen)
}

// WaitDiagnostics waits until diagnostics for every URI of uris have been
// published after mark, or ctx ends, or the server exits. It reports
// whether all arrived.
func (s *Server) WaitDiagnostics(ctx context.Context, mark DiagnosticsMark, uris []string) bool {
	for {
		s.mu.Lock()
		all := true
		for _, u := range uris {
			if p, ok := s.diags[u]; !ok || p.gen <= uint64(mark) {
				all = false
				break
			}
		}
		ch := s.diagChanged
		s.mu.Unlock()
		if all {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-s.proc.Done():
			return false
		}
	}
}

// Diagnostics returns the latest diagnostics the server published, by
// URI (only URIs with at least one diagnostic).
func (s *Server) Diagnostics() map[string][]Diagnostic {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]Diagnostic{}
	for u, p := range s.diags {
		if len(p.diags) > 0 {
			out[u] = p.diags
		}
	}
	return out
}

// stderrSuffix quotes the end of the server's standard error for a
// message, or is empty.
func (s *Server) stderrSuffix() string {
	b := s.proc.Tail()
	if b == "" {
		return ""
	}
	if len(b) > 300 {
		b = b[len(b)-300:]
	}
	return fmt.Sprintf(" (stderr: %q)", b)
}
