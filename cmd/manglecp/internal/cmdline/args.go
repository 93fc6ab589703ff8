// Package cmdline holds the conventions every manglecp command shares: the
// Command signature and its environment (Env), help (-h) and one-line
// usage errors, flags before, between and after the arguments, TARGET,
// the exit codes, and how a server's error or an unreachable server is
// printed. It knows the client and protocol layers, never the server.
package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"

	"github.com/manglecp/manglecp/protocol"
)

// Help is what `manglecp COMMAND -h` prints: the synopsis, one
// paragraph of description, the positional arguments, then the flags.
type Help struct {
	Name        string // the subcommand, e.g. "eval"
	Synopsis    string // e.g. "manglecp eval TARGET --intent NAME [flags]"
	Description string
	Args        string // positional arguments, one per line
}

// TargetArg describes TARGET for every client command.
const TargetArg = `TARGET  the server: http://HOST:PORT or https://..., ws://HOST:PORT or wss://...
        (the path /manglecp/ws by default), or "stdio:COMMAND ARGS..." (quote it,
        or put it last on the line: it takes the rest)`

// NewFlagSet returns a flag set that prints nothing itself: parseArgs
// reports errors in one line and help on stdout.
func NewFlagSet(name string) *flag.FlagSet {
	fl := flag.NewFlagSet(name, flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	fl.Usage = func() {}
	return fl
}

// PrintHelp writes h and the flags of fl to w.
func PrintHelp(w io.Writer, h Help, fl *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", h.Synopsis, h.Description)
	if h.Args != "" {
		fmt.Fprintf(w, "\narguments:\n")
		for _, l := range strings.Split(h.Args, "\n") {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	fmt.Fprintln(w, "\nflags:")
	fl.SetOutput(w)
	fl.PrintDefaults()
	fl.SetOutput(io.Discard)
}

// ParseArgs parses args with flags allowed before, between and after the
// positional arguments. A "stdio:COMMAND" argument without a space takes
// the rest of the line, flags included (quote it to put flags after it).
// It returns the positional arguments, or ok false with the exit code: 0
// after printing help on stdout for -h or --help, 2 after a one-line error
// on stderr.
func ParseArgs(h Help, fl *flag.FlagSet, args []string, stdout, stderr io.Writer) (pos []string, code int, ok bool) {
	for {
		if err := fl.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				PrintHelp(stdout, h, fl)
				return nil, ExitOK, false
			}
			return nil, UsageError(stderr, h, "%s", flagError(fl, err)), false
		}
		rest := fl.Args()
		if len(rest) == 0 {
			return pos, 0, true
		}
		if strings.HasPrefix(rest[0], "stdio:") && !strings.Contains(rest[0], " ") {
			return append(pos, strings.Join(rest, " ")), 0, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// flagSynonyms are flags people reach for from other servers, and the
// flag of this command that does their job (--port is --addr, not the
// --root its spelling is close to).
var flagSynonyms = map[string][]string{
	"port": {"addr", "http"}, "listen": {"addr", "http"}, "bind": {"addr", "http"}, "host": {"addr", "http"},
	"address": {"addr", "http"}, "p": {"addr", "http"},
}

// flagError words a flag parse error; for an undefined flag it adds "did
// you mean --OTHER?" when one of fl's flags does its job (flagSynonyms) or
// is close.
func flagError(fl *flag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: ")
	if !ok {
		return err.Error()
	}
	bare := strings.TrimLeft(name, "-")
	for _, syn := range flagSynonyms[bare] {
		if f := fl.Lookup(syn); f != nil {
			return fmt.Sprintf("%v; did you mean --%s? (it takes HOST:PORT, e.g. --%s 127.0.0.1:8080)", err, syn, syn)
		}
	}
	var names []string
	fl.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if c := protocol.Closest(bare, names); c != "" {
		return fmt.Sprintf("%v; did you mean --%s?", err, c)
	}
	return err.Error()
}

// UsageError prints a one-line usage error and where to find help, and
// returns ExitUsage.
func UsageError(stderr io.Writer, h Help, format string, a ...any) int {
	fmt.Fprintf(stderr, "manglecp %s: %s\nRun 'manglecp %s -h' for usage.\n", h.Name, fmt.Sprintf(format, a...), h.Name)
	return ExitUsage
}

// ParseTarget parses a client command's arguments: exactly one TARGET,
// which must be a URL with a scheme the client speaks or stdio:COMMAND.
func ParseTarget(h Help, fl *flag.FlagSet, args []string, stdout, stderr io.Writer) (string, int, bool) {
	pos, code, ok := ParseArgs(h, fl, args, stdout, stderr)
	if !ok {
		return "", code, false
	}
	switch len(pos) {
	case 0:
		return "", UsageError(stderr, h, "TARGET is missing"), false
	case 1:
	default:
		return "", UsageError(stderr, h, "one TARGET expected, got %d arguments (%s)", len(pos), QuoteList(pos, 3)), false
	}
	if err := CheckTarget(pos[0]); err != nil {
		return "", UsageError(stderr, h, "%v", err), false
	}
	return pos[0], 0, true
}

// CheckTarget reports a target no client transport can reach.
func CheckTarget(t string) error {
	if rest, ok := strings.CutPrefix(t, "stdio:"); ok {
		if strings.TrimSpace(rest) == "" {
			return errors.New(`TARGET "stdio:" names no command: write "stdio:manglecp serve --stdio", for example`)
		}
		return nil
	}
	u, err := url.Parse(t)
	ok := err == nil && u.Host != ""
	switch {
	case ok && (u.Scheme == "http" || u.Scheme == "https" || u.Scheme == "ws" || u.Scheme == "wss"):
		return nil
	case ok:
		return fmt.Errorf("TARGET %s: the scheme %q is not one of http, https, ws, wss or stdio:", Quote(t), u.Scheme)
	}
	return fmt.Errorf("TARGET %s is not a URL: write http://%s (or ws://..., stdio:COMMAND)", Quote(t), strings.TrimPrefix(t, "//"))
}

// Quote quotes s for a message, bounded to 80 bytes.
func Quote(s string) string {
	return fmt.Sprintf("%q", protocol.ClipN(s, 80))
}

// QuoteList quotes at most n items of list.
func QuoteList(list []string, n int) string {
	var q []string
	for i, s := range list {
		if i == n {
			q = append(q, "...")
			break
		}
		q = append(q, Quote(s))
	}
	return strings.Join(q, " ")
}

// CheckListenAddr checks a HOST:PORT flag before listening, in words: net
// says "missing port in address" for a bare port.
func CheckListenAddr(flagName, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	switch {
	case err == nil && port != "":
		return nil
	case addr != "" && strings.Trim(addr, "0123456789") == "":
		return fmt.Errorf("%s %s is a port alone; give HOST:PORT: 127.0.0.1:%s (this machine only) or 0.0.0.0:%s (every interface)", flagName, addr, addr, addr)
	}
	return fmt.Errorf("%s %s: want HOST:PORT, e.g. 127.0.0.1:8080", flagName, Quote(addr))
}
