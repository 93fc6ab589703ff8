package testenv

import (
	"fmt"
	"strings"
)

// FirstDiff shows where two texts (a golden file and what the code makes
// now) first differ: up to three equal lines before, then up to four
// lines of each side, numbered, marked "-" (want) and "+" (got).
func FirstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	if i == len(w) && i == len(g) {
		return "(the texts are equal)"
	}
	var sb strings.Builder
	for j := max(0, i-3); j < i; j++ {
		fmt.Fprintf(&sb, "  %4d   %s\n", j+1, w[j])
	}
	for j := i; j < min(i+4, len(w)); j++ {
		fmt.Fprintf(&sb, "  %4d - %s\n", j+1, w[j])
	}
	for j := i; j < min(i+4, len(g)); j++ {
		fmt.Fprintf(&sb, "  %4d + %s\n", j+1, g[j])
	}
	return sb.String()
}
