package browser

import (
	"embed"
	"io/fs"
)

//go:embed smoke
var smoke embed.FS

// Samples returns the domain's sample requests (smoke/*.json): one
// intent_request envelope per intent, with facts that reach the rules the
// way real pages do. The server evaluates them on new rules before a reload
// swaps them in, and `manglecp check` evaluates them on the rules it checks.
func Samples() fs.FS {
	sub, _ := fs.Sub(smoke, "smoke")
	return sub
}
