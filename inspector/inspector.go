package inspector

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/manglecp/manglecp/client"
)

// Options configure an [Inspector]. A nil *Options means all defaults; [New]
// copies the options.
type Options struct {
	// Target is what the session is connected to, as the user named it (a
	// URL or "stdio:COMMAND ..."); "" means a server in the same process.
	// It is shown on the page and used by the exported scripts.
	Target string
	// ConfirmationKey is the server's confirmation key (Spec 08 section
	// 4.2). With it the page's confirmation step mints a confirmation
	// token, as `manglecp invoke --confirm` does; without it the user pastes
	// a token.
	ConfirmationKey []byte
	// AllowedHosts are the Host header values (host or host:port) the
	// handler accepts. Empty means loopback names only: 127.0.0.1, ::1 and
	// localhost, on any port.
	AllowedHosts []string
	// CallTimeout bounds one evaluate or invoke call; default 2 minutes.
	CallTimeout time.Duration
	// MaxHistory bounds the remembered requests; the oldest are dropped
	// beyond it. Default 500.
	MaxHistory int
	// Logger receives the inspector's logs. Default: discard.
	Logger *slog.Logger
	// Now is the clock (tests fix it). Default time.Now.
	Now func() time.Time
}

// Inspector serves the inspector page and its API for one client session.
// It is safe for concurrent use.
type Inspector struct {
	s       *client.Session
	opts    Options
	token   string
	assets  fs.FS
	history *history
}

// TokenHeader is the request header that carries the session token on
// every API call.
const TokenHeader = "X-Inspector-Token"

// New returns an inspector for the session s, with a fresh random session
// token. The inspector does not own s: the caller closes it after the
// handler stopped serving.
func New(s *client.Session, opts *Options) (*Inspector, error) {
	if s == nil {
		return nil, errors.New("inspector: New needs a session")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	o.ConfirmationKey = append([]byte(nil), o.ConfirmationKey...)
	o.AllowedHosts = append([]string(nil), o.AllowedHosts...)
	if o.CallTimeout <= 0 {
		o.CallTimeout = 2 * time.Minute
	}
	if o.MaxHistory <= 0 {
		o.MaxHistory = 500
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("inspector: session token: %w", err)
	}
	sub, err := fs.Sub(assetFS, "assets")
	if err != nil {
		return nil, err
	}
	return &Inspector{
		s:       s,
		opts:    o,
		token:   base64.RawURLEncoding.EncodeToString(b[:]),
		assets:  sub,
		history: newHistory(o.MaxHistory),
	}, nil
}

// Token returns the session token every API call must carry.
func (in *Inspector) Token() string { return in.token }

// URL returns the address to open in a browser for a listener at addr:
// the page, with the session token in the fragment.
func (in *Inspector) URL(addr net.Addr) string {
	host := addr.String()
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		host = net.JoinHostPort("127.0.0.1", fmt.Sprint(tcp.Port))
	}
	return "http://" + host + "/#token=" + in.token
}

// Handler returns the HTTP handler of the page and its API.
func (in *Inspector) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/session", in.api(in.handleSession))
	mux.HandleFunc("POST /api/manifest/refresh", in.api(in.handleRefresh))
	mux.HandleFunc("POST /api/evaluate", in.api(in.handleEvaluate))
	mux.HandleFunc("POST /api/invoke", in.api(in.handleInvoke))
	mux.HandleFunc("POST /api/apply", in.api(in.handleApply))
	mux.HandleFunc("GET /api/history", in.api(in.handleHistory))
	mux.HandleFunc("GET /api/history/script", in.guard(in.handleScript))
	known := map[string]string{
		"/api/session": "GET", "/api/manifest/refresh": "POST", "/api/evaluate": "POST",
		"/api/invoke": "POST", "/api/apply": "POST", "/api/history": "GET", "/api/history/script": "GET",
	}
	mux.HandleFunc("/api/", in.guard(func(w http.ResponseWriter, r *http.Request) {
		if m, ok := known[r.URL.Path]; ok {
			w.Header().Set("Allow", m)
			writeJSON(w, http.StatusMethodNotAllowed, apiError{Error: "use " + m})
			return
		}
		writeJSON(w, http.StatusNotFound, apiError{Error: "no such API call"})
	}))
	mux.HandleFunc("/", in.handleAsset)
	return in.protect(mux)
}

// Listen opens a TCP listener on addr for the inspector. A host that is not
// loopback (127.0.0.0/8, ::1, localhost), or an empty host (every
// interface), is refused unless allowRemote is set: the inspector holds a
// live session to a server and should not be reachable from elsewhere by
// accident. "localhost" listens on 127.0.0.1.
func Listen(addr string, allowRemote bool) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("inspector: address %q: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		host = "127.0.0.1"
	}
	if !allowRemote && !isLoopbackHost(host) {
		return nil, fmt.Errorf("inspector: %q is not a loopback address; the inspector listens on loopback only unless remote access is allowed explicitly", addr)
	}
	return net.Listen("tcp", net.JoinHostPort(host, port))
}

// isLoopbackHost reports whether host (no port) names the loopback
// interface: a loopback IP literal or "localhost".
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
