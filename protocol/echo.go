package protocol

import (
	"strconv"
	"unicode/utf8"
)

// MaxEchoBytes is the most bytes of one client-supplied string (a version,
// a type, a macro_id, an intent name, a field name) that an error message
// or an error detail repeats. A longer string is cut at a rune boundary and
// marked with "...", so an answer never grows with the size of the
// client's text.
const MaxEchoBytes = 64

// Clip returns at most [MaxEchoBytes] bytes of s, cut at a rune boundary,
// followed by "..." when something was cut. Use it for client text that
// goes into a details field (JSON encoding escapes it there).
func Clip(s string) string {
	if p, cut := prefix(s); cut {
		return p + "..."
	}
	return s
}

// Quote returns client text for an error message: clipped like [Clip], then
// quoted and escaped like strconv.Quote (control characters, quotes and
// invalid UTF-8 are escaped), so the message stays one short readable
// line whatever the client sent. Use it instead of %q for every string
// that came from a client.
func Quote(s string) string {
	if p, cut := prefix(s); cut {
		return strconv.Quote(p) + "..."
	}
	return strconv.Quote(s)
}

// prefix is the first MaxEchoBytes bytes of s, cut at a rune boundary, and
// whether anything was cut.
func prefix(s string) (string, bool) {
	if len(s) <= MaxEchoBytes {
		return s, false
	}
	cut := MaxEchoBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}
