package gateway

import (
	"strings"
)

// span is a replacement in a file's text: bytes [from, to) become text.
type span struct {
	from, to int
	text     string
}

// fileEdit is one item of edit_file's edits.
type fileEdit struct {
	old, new string
}

// maxHunks bounds the edits of one file; a file with more changed
// regions is edited as a whole (one edit).
const maxHunks = 200

// applySpans is s with the spans (sorted, not overlapping) within [a, b)
// replaced; s[a:b] itself when none is.
func applySpans(s string, spans []span, a, b int) string {
	var out strings.Builder
	at := a
	for _, sp := range spans {
		if sp.from < a || sp.to > b {
			continue
		}
		out.WriteString(s[at:sp.from])
		out.WriteString(sp.text)
		at = sp.to
	}
	out.WriteString(s[at:b])
	return out.String()
}

func lineStart(s string, i int) int { return strings.LastIndexByte(s[:i], '\n') + 1 }

// lineEnd is the end of the line holding offset i, before its "\n" or
// "\r\n" (the filesystem server reads "\r\n" as "\n" in a file and an
// edit alike, so an edit never ends between the two).
func lineEnd(s string, i int) int {
	j := strings.IndexByte(s[i:], '\n')
	if j < 0 {
		return len(s)
	}
	end := i + j
	if end > i && s[end-1] == '\r' {
		end--
	}
	return end
}

// nextLineEnd is the end of the line after the one ending at i.
func nextLineEnd(s string, i int) int {
	j := strings.IndexByte(s[i:], '\n')
	if j < 0 {
		return len(s)
	}
	return lineEnd(s, i+j+1)
}

// editsFor returns the edits of edit_file that turn before into before
// with the spans replaced, as the filesystem server applies them: in
// order, each replacing the first occurrence of its old text in the text
// the earlier ones left. Each edit is the whole lines of a changed region,
// grown by neighbouring lines until its first occurrence is the region
// itself; so each lands where the preview showed it. A file whose regions
// cannot be told apart that way (or has over maxHunks) is one edit of the
// whole text.
func editsFor(before string, spans []span) []fileEdit {
	after := applySpans(before, spans, 0, len(before))
	whole := []fileEdit{{old: before, new: after}}
	var hunks [][2]int
	for _, sp := range spans {
		a, b := lineStart(before, sp.from), lineEnd(before, sp.to)
		if n := len(hunks); n > 0 && a <= hunks[n-1][1]+2 {
			hunks[n-1][1] = max(hunks[n-1][1], b)
			continue
		}
		hunks = append(hunks, [2]int{a, b})
	}
	if len(hunks) > maxHunks {
		return whole
	}
	var edits []fileEdit
	prefix, done := "", 0 // the text the edits so far made of before[:done]
	for i := 0; i < len(hunks); i++ {
		a, b := hunks[i][0], hunks[i][1]
		for {
			head := prefix + before[done:a]
			if strings.Index(head+before[a:], before[a:b]) == len(head) {
				break
			}
			// Grow by the line above (up to the last edit), else below.
			switch {
			case a > done:
				a = max(lineStart(before, a-1), done)
			case b < len(before):
				b = nextLineEnd(before, b)
				for i+1 < len(hunks) && hunks[i+1][0] <= b+2 {
					b = max(b, hunks[i+1][1])
					i++
				}
			default:
				return whole
			}
		}
		e := fileEdit{old: before[a:b], new: applySpans(before, spans, a, b)}
		edits = append(edits, e)
		prefix += before[done:a] + e.new
		done = b
	}
	if replayEdits(before, edits) != after {
		return whole
	}
	return edits
}

// replayEdits applies edits as the filesystem server does (each replaces
// the first occurrence of its old text); "" (with a NUL) when one is not
// found.
func replayEdits(s string, edits []fileEdit) string {
	for _, e := range edits {
		if !strings.Contains(s, e.old) {
			return "\x00"
		}
		s = strings.Replace(s, e.old, e.new, 1)
	}
	return s
}

// sameText reports whether two texts are equal up to line endings (the
// filesystem server writes "\n" for "\r\n").
func sameText(a, b string) bool {
	return a == b || strings.ReplaceAll(a, "\r\n", "\n") == strings.ReplaceAll(b, "\r\n", "\n")
}
