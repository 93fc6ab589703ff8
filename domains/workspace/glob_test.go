package workspace

import "testing"

// TestGlobSemantics: the search glob has path.Match's semantics within a
// segment (a class never matches "/", "[!a]" included), "**" spans
// segments, {a,b} is either, and a pattern without "/" matches the base
// name.
func TestGlobSemantics(t *testing.T) {
	for _, tc := range []struct {
		pattern, rel string
		want         bool
	}{
		{"*.go", "a/b/main.go", true},
		{"*.go", "a/b/main.txt", false},
		{"a/*.go", "a/main.go", true},
		{"a/*.go", "a/b/main.go", false},
		{"**/*.go", "main.go", true},
		{"**/*.go", "a/b/c/main.go", true},
		{"a/**", "a/b/c", true},
		{"a?c/x", "abc/x", true},
		{"a?c/x", "a/c/x", false},
		{"a[!b]c/x", "a/c/x", false}, // a negated class never matches "/"
		{"a[^b]c/x", "a/c/x", false},
		{"a[!b]c/x", "azc/x", true},
		{"a[a-z]c/x", "a/c/x", false},
		{"*.{md,txt}", "docs/readme.md", true},
		{"*.{md,txt}", "docs/readme.go", false},
		{`\*.go`, "*.go", true},
		{`\*.go`, "x.go", false},
	} {
		g, err := compileGlob(tc.pattern)
		if err != nil {
			t.Errorf("compileGlob(%q): %v", tc.pattern, err)
			continue
		}
		if got := g.match(tc.rel); got != tc.want {
			t.Errorf("glob %q matches %q: %v, want %v", tc.pattern, tc.rel, got, tc.want)
		}
	}
	for _, bad := range []string{"", "[abc", "{a,b", `a\`} {
		if _, err := compileGlob(bad); err == nil {
			t.Errorf("compileGlob(%q) accepted a broken pattern", bad)
		}
	}
}
