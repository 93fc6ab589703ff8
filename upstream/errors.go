package upstream

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/manglecp/manglecp/internal/clip"
)

// Kind classifies an upstream failure.
type Kind int

// The kinds of [Error].
const (
	// Unreachable: the upstream could not be started or connected, or it
	// exited (or its connection dropped) during the call.
	Unreachable Kind = iota + 1
	// Timeout: the upstream did not answer within the call timeout.
	Timeout
	// ToolFailed: the upstream answered the call with an error (a tool
	// result with isError, or a JSON-RPC error such as an unknown tool).
	ToolFailed
	// ProtocolMismatch: the upstream does not speak a version of MCP the
	// client knows, or sent a message that breaks the protocol or its
	// bounds (a tool list too large).
	ProtocolMismatch
	// Busy: the upstream serves as many identities as it may (each with a
	// session of its own); RetryAfter says when to try again.
	Busy
	// AnswerTooLarge: the upstream's answer to the call was over
	// MaxMessageBytes. It was discarded as it arrived; the session goes
	// on.
	AnswerTooLarge
)

// String names the kind ("unreachable", "timeout", ...).
func (k Kind) String() string {
	switch k {
	case Unreachable:
		return "unreachable"
	case Timeout:
		return "timeout"
	case ToolFailed:
		return "tool failed"
	case ProtocolMismatch:
		return "protocol mismatch"
	case Busy:
		return "busy"
	case AnswerTooLarge:
		return "answer too large"
	}
	return "unknown"
}

// MaxMessage is the most bytes of an upstream's own text an [Error]
// carries.
const MaxMessage = 300

// Error is an upstream failure. Message is safe to show a client: bounded
// to [MaxMessage] bytes, control characters escaped, absolute paths cut to
// their last element and stack trace lines removed. The unsanitized cause
// is Unwrap's, for the server's log only.
type Error struct {
	Upstream string
	Kind     Kind
	Message  string
	// RetryAfter, when positive, is when a restarting upstream is tried
	// again.
	RetryAfter time.Duration
	err        error
}

// Error says which upstream failed, how and why.
func (e *Error) Error() string {
	return fmt.Sprintf("upstream %s: %s: %s", e.Upstream, e.Kind, e.Message)
}

// Unwrap returns the underlying cause (not sanitized).
func (e *Error) Unwrap() error { return e.err }

// Cause is the whole text of err's cause, for the server's log only (never
// a client): the path of a command that cannot start and why, untouched by
// Sanitize; URLs' credentials redacted. It is err's own text when err is
// not an [Error].
func Cause(err error) string {
	var e *Error
	if errors.As(err, &e) && e.err != nil {
		return RedactURLs(e.err.Error())
	}
	if err == nil {
		return ""
	}
	return RedactURLs(err.Error())
}

// innermost is the text of the deepest error err wraps: "no such file or
// directory" of a command that does not exist, not its path.
func innermost(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

func newError(name string, kind Kind, cause error, format string, args ...any) *Error {
	return &Error{Upstream: name, Kind: kind, Message: Sanitize(RedactURLs(fmt.Sprintf(format, args...)), MaxMessage), err: cause}
}

// urlPattern finds URLs in text (up to a space, a quote or a bracket).
var urlPattern = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]{0,15}://[^\s"'<>` + "`" + `]+`)

// RedactURLs replaces the credentials of every URL in s: its user
// information (https://user:password@host) and the value of every query
// parameter (?access_token=...) become "REDACTED"; the fragment is
// dropped. Status reasons and log lines about an upstream pass through it,
// so that an upstream URL's credentials reach neither the public manifest
// nor the log.
func RedactURLs(s string) string {
	return urlPattern.ReplaceAllStringFunc(s, redactURL)
}

func redactURL(raw string) string {
	scheme, rest, _ := strings.Cut(raw, "://")
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		authority = "REDACTED@" + authority[i+1:]
	}
	if i := strings.IndexByte(tail, '#'); i >= 0 {
		tail = tail[:i]
	}
	path, query, hasQuery := strings.Cut(tail, "?")
	if !hasQuery {
		return scheme + "://" + authority + path
	}
	var keys []string
	for _, kv := range strings.Split(query, "&") {
		if kv == "" {
			continue
		}
		k, _, hasValue := strings.Cut(kv, "=")
		if !hasValue {
			keys = append(keys, "REDACTED")
			continue
		}
		if len(k) > 40 {
			k = Truncate(k, 40)
		}
		keys = append(keys, k+"=REDACTED")
	}
	return scheme + "://" + authority + path + "?" + strings.Join(keys, "&")
}

var (
	// absPath matches an absolute Unix or Windows path of two or more
	// elements.
	absPath = regexp.MustCompile(`(?:[A-Za-z]:\\|/)(?:[^\s/\\:'"<>()\[\],;]+[/\\])+[^\s/\\:'"<>()\[\],;]*`)
	// stackLine matches the lines of a stack trace (Node, Python, Go, Java).
	stackLine = regexp.MustCompile(`^\s*(at\s|File "|Traceback|goroutine \d|\S+\.go:\d+|\S+\.(js|ts|mjs|py):\d+)`)
)

// Sanitize makes upstream text safe to show: stack trace lines dropped,
// absolute paths shortened to ".../last", control characters escaped,
// bounded to max bytes (cut on a rune boundary, "..." appended).
func Sanitize(s string, max int) string {
	if len(s) > 16*max {
		s = s[:16*max] // bound the work on hostile input
	}
	var keep []string
	for _, line := range strings.Split(s, "\n") {
		if stackLine.MatchString(line) {
			continue
		}
		keep = append(keep, line)
	}
	s = strings.Join(keep, "\n")
	s = absPath.ReplaceAllStringFunc(s, func(p string) string {
		p = strings.ReplaceAll(p, `\`, "/")
		return ".../" + path.Base(strings.TrimRight(p, "/"))
	})
	var b strings.Builder
	for _, r := range strings.TrimSpace(s) {
		switch {
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		case r == '\n':
			b.WriteString(" ")
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return Truncate(b.String(), max)
}

// Truncate cuts s to at most max bytes on a rune boundary, appending "..."
// when it cut.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return clip.N(s, max-len(clip.Ellipsis))
}
