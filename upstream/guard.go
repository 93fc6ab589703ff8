package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
)

// codeTooLarge is the JSON-RPC error code of the answer the gateway puts
// in place of an upstream's answer over MaxMessageBytes (a code of the
// range JSON-RPC leaves to implementations).
const codeTooLarge = -32099

// lineGuard passes an upstream's messages through, one a line (a stdio
// line, or an SSE "data:" line). A line over max bytes is never buffered:
// it is read to its end and discarded, and when it was the answer to a
// request (a top-level "id" and no "method"), an error answer for that id
// (code codeTooLarge) takes its place. So only the call that asked for it
// fails; the session, and every other call under way on it, go on.
type lineGuard struct {
	r       *bufio.Reader
	max     int
	prefix  string // written before a replacement ("data: " for SSE)
	pending []byte
	err     error
	dropped func(answered bool)
}

func newLineGuard(r io.Reader, max int, prefix string, dropped func(bool)) *lineGuard {
	return &lineGuard{r: bufio.NewReaderSize(r, 64<<10), max: max, prefix: prefix, dropped: dropped}
}

func (g *lineGuard) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		g.pending, g.err = g.next()
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// next reads one line: the line itself when within max, else its
// replacement (nothing for a line that answered no request).
func (g *lineGuard) next() ([]byte, error) {
	var (
		buf []byte
		sc  *idScanner
	)
	for {
		chunk, err := g.r.ReadSlice('\n')
		if sc == nil && len(buf)+len(chunk) <= g.max {
			buf = append(buf, chunk...)
		} else {
			if sc == nil {
				sc = &idScanner{}
				sc.feed(buf)
				buf = nil
			}
			sc.feed(chunk)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if sc == nil {
			return buf, err
		}
		if err != nil { // the stream ended within the line
			return nil, err
		}
		id, answer := sc.result()
		if g.dropped != nil {
			g.dropped(answer)
		}
		if !answer {
			return nil, nil
		}
		return []byte(fmt.Sprintf(`%s{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"the upstream's answer was over %d bytes"}}`+"\n",
			g.prefix, id, codeTooLarge, g.max)), nil
	}
}

// idScanner reads a JSON object as it streams past, without keeping it,
// for its top-level "id" value (a number or a short string) and whether
// it has a top-level "method".
type idScanner struct {
	depth     int
	inStr     bool
	esc       bool
	afterKey  bool // at depth 1: a key was read, its value comes next
	inValue   bool // at depth 1: within a value
	key       []byte
	capturing bool
	val       []byte
	bad       bool
	id        []byte
	method    bool
}

const maxIDBytes = 200

func (s *idScanner) feed(b []byte) {
	for _, c := range b {
		if s.inStr {
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.inStr = false
				if s.depth == 1 && !s.afterKey && !s.inValue {
					s.afterKey = true
				}
				s.add('"')
				continue
			}
			if s.depth == 1 && !s.afterKey && !s.inValue && len(s.key) < 16 {
				s.key = append(s.key, c)
			}
			s.add(c)
			continue
		}
		switch c {
		case '"':
			s.inStr = true
			if s.depth == 1 && !s.afterKey && !s.inValue {
				s.key = s.key[:0]
			}
			s.add(c)
		case '{', '[':
			if s.capturing {
				s.bad = true
			}
			s.depth++
		case '}', ']':
			if s.depth == 1 {
				s.finish()
			}
			s.depth--
		case ':':
			if s.depth == 1 && s.afterKey {
				s.afterKey, s.inValue = false, true
				switch string(s.key) {
				case "id":
					s.capturing, s.val, s.bad = true, s.val[:0], false
				case "method":
					s.method = true
				}
			}
		case ',':
			if s.depth == 1 {
				s.finish()
				s.inValue = false
			}
		case ' ', '\t', '\r', '\n':
		default:
			s.add(c)
		}
	}
}

func (s *idScanner) add(c byte) {
	if !s.capturing || s.depth != 1 {
		return
	}
	if len(s.val) >= maxIDBytes {
		s.bad = true
		return
	}
	s.val = append(s.val, c)
}

func (s *idScanner) finish() {
	if s.capturing {
		s.capturing = false
		if !s.bad && len(s.val) > 0 {
			s.id = append([]byte(nil), s.val...)
		}
	}
}

// result is the answered request's id (JSON), and whether the object
// answered a request at all.
func (s *idScanner) result() (string, bool) {
	if s.method || len(s.id) == 0 || !json.Valid(s.id) {
		return "", false
	}
	if c := s.id[0]; c != '"' && c != '-' && (c < '0' || c > '9') {
		return "", false
	}
	return string(s.id), true
}

// errRedirect refuses an HTTP upstream's redirect to another server.
var errRedirect = errors.New("the upstream answered with a redirect to another server, which the gateway does not follow")

// checkRedirect follows a redirect only to the same host and port, never
// from https to http, at most 3 times: a JSON-RPC request (and its
// headers) is never posted to another server.
func checkRedirect(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if len(via) >= 3 || req.URL.Host != first.Host || (first.Scheme == "https" && req.URL.Scheme != "https") {
		return errRedirect
	}
	return nil
}

// boundedTransport bounds the body of every HTTP answer: a JSON answer or
// an SSE event over max is replaced by an error answer to its request (see
// lineGuard), and the connection goes on.
type boundedTransport struct {
	max  int
	base http.RoundTripper
}

func (b *boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var id json.RawMessage
	if r.Body != nil && r.Method == http.MethodPost {
		raw, err := io.ReadAll(io.LimitReader(r.Body, int64(b.max)+1))
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(raw, &msg) == nil && msg.Method != "" && len(msg.ID) > 0 && len(msg.ID) <= maxIDBytes {
			id = msg.ID
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil }
	}
	resp, err := b.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = readCloser{newLineGuard(resp.Body, b.max, "data: ", nil), resp.Body}
		return resp, nil
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body = readCloser{io.LimitReader(resp.Body, 64<<10), resp.Body}
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(b.max)+1))
	if err == nil && len(body) > b.max {
		resp.Body.Close()
		if id == nil {
			return nil, errTooLarge
		}
		body = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"the upstream's answer was over %d bytes"}}`, id, codeTooLarge, b.max)
		resp.Header.Set("Content-Type", "application/json")
		resp.Header.Del("Content-Length")
		resp.ContentLength = int64(len(body))
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.ContentLength = int64(len(body))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// readCloser reads from r and closes c.
type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }

// errTooLarge is an HTTP answer over MaxMessageBytes that answers no
// request.
var errTooLarge = errors.New("upstream answer too large")

// baseEnv names what a program needs of the environment to run: where
// programs are, the user and home, locale, time zone and temporary
// directory (and on Windows, the system's own variables).
var baseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE",
	"LC_MESSAGES", "TZ", "TMPDIR", "TERM", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"}

var windowsEnv = []string{"SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT", "TEMP", "TMP", "APPDATA", "LOCALAPPDATA",
	"USERPROFILE", "PROGRAMDATA", "PROGRAMFILES", "HOMEDRIVE", "HOMEPATH"}

// BaseEnv lists the variables of the server's environment every upstream
// command gets (PATH, HOME, USER, LANG, TZ, TMPDIR ...); beyond them it
// gets only those Config.PassEnv names and Config.Env sets.
func BaseEnv() []string {
	out := append([]string(nil), baseEnv...)
	if runtime.GOOS == "windows" {
		out = append(out, windowsEnv...)
	}
	return out
}

// environ is the environment of c's command: BaseEnv and PassEnv from
// the server's environment, then Env.
func environ(c Config) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range append(BaseEnv(), c.PassEnv...) {
		key := k
		if runtime.GOOS == "windows" {
			key = strings.ToUpper(k)
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		if v, ok := os.LookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	return append(out, c.Env...)
}
