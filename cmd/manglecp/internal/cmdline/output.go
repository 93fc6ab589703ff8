package cmdline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/protocol"
)

// Exit codes of the commands (the client commands manifest, eval, invoke,
// conformance, mcp and inspect use them all):
//
//	0  success
//	1  the server answered with an error (JSON mode prints its envelope)
//	2  usage error (bad flags or arguments)
//	3  the server could not be reached or did not speak MangleCP
const (
	ExitOK        = 0 // success
	ExitProtocol  = 1 // the server answered with an error
	ExitUsage     = 2 // bad flags or arguments
	ExitTransport = 3 // the server could not be reached
)

// Fail reports err and returns the exit code: a server's error answer is
// printed as its envelope in JSON mode, and in words otherwise; a target
// that cannot be reached is one line naming it and the cause.
func Fail(err error, asJSON bool, stdout, stderr io.Writer) int {
	var ce *client.Error
	if errors.As(err, &ce) && ce.Payload != nil {
		if asJSON {
			raw, _ := protocol.ErrorEnvelope(ce.RequestID, ce.Payload).Encode()
			fmt.Fprintln(stdout, string(raw))
		} else {
			PrintError(stderr, ce.Payload)
		}
		return ExitProtocol
	}
	msg := transportMessage(err)
	if asJSON {
		raw, _ := protocol.ErrorEnvelope("", protocol.Errorf("x-transport_error", "%s", msg)).Encode()
		fmt.Fprintln(stdout, string(raw))
	} else {
		fmt.Fprintf(stderr, "manglecp: %s\n", msg)
	}
	return ExitTransport
}

// PrintError prints a registry error in words: code and message, then
// its details, one per line.
func PrintError(w io.Writer, e *protocol.Error) {
	fmt.Fprintf(w, "error %s: %s\n", e.Code, e.Message)
	d := e.Details
	if d == nil {
		return
	}
	for _, v := range d.Violations {
		where := "request"
		if v.FactIndex >= 0 {
			where = fmt.Sprintf("fact %d", v.FactIndex)
		}
		if v.Predicate != "" {
			where += " (" + v.Predicate + ")"
		}
		fmt.Fprintf(w, "  %s: %s\n", where, v.Message)
	}
	for _, se := range d.SchemaErrors {
		path := se.Path
		if path == "" {
			path = "args"
		}
		fmt.Fprintf(w, "  %s: %s\n", path, se.Message)
	}
	if b := d.Budget; b != nil {
		fmt.Fprintf(w, "  budget: %d of %d %s\n", b.Consumed, b.Limit, b.Unit)
	}
}

// transportMessage says in one line why a server could not be reached:
// the target and the innermost cause, without the client's own prefixes.
func transportMessage(err error) string {
	var te *client.TransportError
	if !errors.As(err, &te) {
		if errors.Is(err, context.DeadlineExceeded) {
			return "no answer in time"
		}
		return strings.TrimPrefix(err.Error(), "manglecp client: ")
	}
	where := te.URL
	if where == "" {
		where = "the server"
	}
	if te.Status != 0 {
		return fmt.Sprintf("%s answered HTTP %d, not a MangleCP message: is the URL right?", where, te.Status)
	}
	cause := te.Err
	for cause != nil && errors.Unwrap(cause) != nil {
		cause = errors.Unwrap(cause)
	}
	why := "unknown error"
	if cause != nil {
		why = strings.TrimPrefix(cause.Error(), "manglecp client: ")
	}
	if te.Op == "dial" || te.Op == "manifest" {
		return fmt.Sprintf("cannot reach %s: %s", where, why)
	}
	return fmt.Sprintf("%s %s failed: %s", te.Op, where, why)
}

// PrintJSON prints v as indented JSON, HTML characters unescaped.
func PrintJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// Spinner shows that a long operation runs, when stderr is a terminal.
type Spinner struct {
	w    io.Writer
	on   bool
	stop chan struct{}
	done chan struct{}
}

// StartSpinner starts a spinner on w saying what runs.
func StartSpinner(w io.Writer, what string) *Spinner {
	s := &Spinner{w: w, stop: make(chan struct{}), done: make(chan struct{})}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			s.on = true
		}
	}
	if !s.on {
		close(s.done)
		return s
	}
	go func() {
		defer close(s.done)
		frames := `|/-\`
		t := time.NewTicker(120 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-s.stop:
				fmt.Fprint(s.w, "\r\033[K")
				return
			case <-t.C:
				fmt.Fprintf(s.w, "\r%c %s", frames[i%len(frames)], what)
			}
		}
	}()
	return s
}

// Note prints a progress notification under the spinner.
func (s *Spinner) Note(p protocol.Progress) {
	if s.on {
		fmt.Fprintf(s.w, "\r\033[K  %s %s\n", p.Status, p.Detail)
	}
}

// End stops the spinner and clears its line.
func (s *Spinner) End() {
	if s.on {
		close(s.stop)
	}
	<-s.done
}

// FirstNonEmpty returns the first of s that is not empty.
func FirstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
