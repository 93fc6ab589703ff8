// Package clip shortens text: the project's one clipping function, for
// messages, details, log lines and listings. It is a leaf of the standard
// library, so every layer may use it (the protocol layer's Clip and Quote,
// the browser executor, the upstream supervisor).
package clip

import "unicode/utf8"

// Ellipsis marks text that [N] cut: the one style of the project.
const Ellipsis = "..."

// N returns at most n bytes of s, cut at a rune boundary (never inside a
// UTF-8 character), followed by [Ellipsis] when something was cut; so the
// result has at most n+len(Ellipsis) bytes. A negative n counts as 0.
func N(s string, n int) string {
	if p, cut := Prefix(s, n); cut {
		return p + Ellipsis
	}
	return s
}

// Prefix is the first n bytes of s, cut at a rune boundary, and whether
// anything was cut.
func Prefix(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}
