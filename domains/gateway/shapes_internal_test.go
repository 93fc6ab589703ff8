package gateway

import (
	"fmt"
	"testing"
)

// TestReaders: the answers the embedded packs know become facts.
func TestReaders(t *testing.T) {
	for _, tc := range []struct {
		name string
		read reader
		args map[string]any
		text string
		want string
	}{
		{"listing", fsListing, map[string]any{"path": "/w"}, "[FILE] a.txt\n[DIR] src\nnoise", `[fs_listed(/w/a.txt, file) fs_listed(/w/src, dir)]`},
		{"search", fsMatches, nil, "/w/src/main.go\n/w/src/util.go\nNo matches found", `[fs_listed(/w/src/main.go, match) fs_listed(/w/src/util.go, match)]`},
		{"console", pwConsole, nil, "### Result\nTotal messages: 1\n\n[ERROR] Failed to load orders: HTTP 404 @ http://h/orders.html:8", `[pw_console(error, Failed to load orders: HTTP 404)]`},
		{"network", pwRequests, nil, "### Result\n2. [GET] http://h/api/orders => [404] Not Found", `[pw_request(GET, http://h/api/orders, 404)]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range tc.read(tc.args, tc.text) {
				s := f.Pred + "("
				for i, a := range f.Args {
					if i > 0 {
						s += ", "
					}
					s += fmt.Sprint(a)
				}
				got = append(got, s+")")
			}
			if fmt.Sprint(got) != tc.want {
				t.Errorf("got %v, want %s", got, tc.want)
			}
		})
	}
}
