package protocol

import (
	"strconv"

	"github.com/manglecp/manglecp/internal/clip"
)

// MaxEchoBytes is the most bytes of one client-supplied string (a version,
// a type, a macro_id, an intent name, a field name) that an error message
// or an error detail repeats. A longer string is cut at a rune boundary and
// marked with "...", so an answer never grows with the size of the
// client's text.
const MaxEchoBytes = 64

// Ellipsis marks text that [ClipN] (and so [Clip] and [Quote]) cut: the
// one style of the project (internal/clip).
const Ellipsis = clip.Ellipsis

// Clip returns at most [MaxEchoBytes] bytes of s, cut at a rune boundary,
// followed by "..." when something was cut. Use it for client text that
// goes into a details field (JSON encoding escapes it there).
func Clip(s string) string {
	return ClipN(s, MaxEchoBytes)
}

// ClipN returns at most n bytes of s, cut at a rune boundary (never
// inside a UTF-8 character), followed by [Ellipsis] when something was
// cut; so the result has at most n+len(Ellipsis) bytes. It is the one way
// the project shortens text (internal/clip, which the layers below the
// protocol use directly); a negative n counts as 0.
func ClipN(s string, n int) string { return clip.N(s, n) }

// Quote returns client text for an error message: clipped like [Clip], then
// quoted and escaped like strconv.Quote (control characters, quotes and
// invalid UTF-8 are escaped), so the message stays one short readable
// line whatever the client sent. Use it instead of %q for every string
// that came from a client.
func Quote(s string) string {
	if p, cut := clip.Prefix(s, MaxEchoBytes); cut {
		return strconv.Quote(p) + Ellipsis
	}
	return strconv.Quote(s)
}
