// Package plural words a count with its noun: "1 error", "2 errors".
package plural

import "strconv"

// N returns n followed by one when n is 1 (or -1), else by many:
// N(1, "console error", "console errors") is "1 console error".
func N(n int, one, many string) string {
	if n == 1 || n == -1 {
		return strconv.Itoa(n) + " " + one
	}
	return strconv.Itoa(n) + " " + many
}

// S is [N] for a noun whose plural adds "s": S(2, "error") is "2 errors".
func S(n int, noun string) string { return N(n, noun, noun+"s") }
