// Package words finds a text in another, optionally as a whole word: the
// matching that the workspace domain's replace and the gateway's composed
// replace and search share, so that "calc_total" never matches inside
// "calc_total_weight" in one and does in the other.
package words

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Find returns the byte offsets of old in s, left to right, not
// overlapping; with whole, only where old is not part of a longer word
// (see [Whole]). An empty old is found nowhere.
func Find(s, old string, whole bool) []int {
	if old == "" {
		return nil
	}
	var at []int
	for i := 0; i <= len(s)-len(old); {
		j := strings.Index(s[i:], old)
		if j < 0 {
			break
		}
		j += i
		if !whole || Whole(s, old, j) {
			at = append(at, j)
			i = j + len(old)
			continue
		}
		_, size := utf8.DecodeRuneInString(s[j:])
		i = j + size
	}
	return at
}

// Whole reports whether old at offset i of s is not part of a longer
// word: where old starts (ends) with a word character (a letter, a digit
// or "_"), the character before (after) it is none.
func Whole(s, old string, i int) bool {
	first, _ := utf8.DecodeRuneInString(old)
	last, _ := utf8.DecodeLastRuneInString(old)
	if IsWordRune(first) && i > 0 {
		if r, _ := utf8.DecodeLastRuneInString(s[:i]); IsWordRune(r) {
			return false
		}
	}
	if IsWordRune(last) && i+len(old) < len(s) {
		if r, _ := utf8.DecodeRuneInString(s[i+len(old):]); IsWordRune(r) {
			return false
		}
	}
	return true
}

// IsWordRune reports whether r is a letter, a digit or "_".
func IsWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}
