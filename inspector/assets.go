package inspector

import (
	"embed"
	"io/fs"
)

// assetFS holds the page: plain HTML, CSS and JavaScript, no build step.
//
//go:embed assets
var assetFS embed.FS

// readAsset reads one file of the page.
func readAsset(fsys fs.FS, name string) ([]byte, error) {
	return fs.ReadFile(fsys, name)
}
