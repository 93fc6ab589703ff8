// Package buildinfo says which release of github.com/manglecp/manglecp a
// binary was built from, as the Go build info records it, and where the
// module's source was when it was built from a checkout instead.
package buildinfo

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// Module is the path of this project's Go module.
const Module = "github.com/manglecp/manglecp"

// source, when set at build time (-ldflags "-X
// github.com/manglecp/manglecp/internal/buildinfo.source=DIR"), is the
// checkout SourceDir reports, for builds with -trimpath.
var source string

// Release returns the release of [Module] the running binary was built
// from ("v0.2.0"): its own module (go install
// github.com/manglecp/manglecp/cmd/manglecp@v0.2.0) or a dependency (a
// domain whose go.mod requires v0.2.0). A build from a checkout, a
// pseudo-version or a replaced module gives "".
func Release() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return release(bi)
}

func release(bi *debug.BuildInfo) string {
	m := &bi.Main
	if m.Path != Module {
		m = nil
		for _, d := range bi.Deps {
			if d.Path == Module {
				m = d
				break
			}
		}
	}
	if m == nil || m.Replace != nil {
		return ""
	}
	return releaseVersion(m.Version)
}

// releaseVersion returns v when it is a release's semantic version
// (v1.2.3 or v1.2.3-rc.1): not "(devel)", a pseudo-version or a build
// with metadata (+dirty).
func releaseVersion(v string) string {
	if !semver.IsValid(v) || module.IsPseudoVersion(v) || semver.Build(v) != "" {
		return ""
	}
	return v
}

// SourceDir returns the directory of the [Module] checkout this binary was
// compiled from, when the build recorded it: the compiler keeps absolute
// source paths unless -trimpath, and -ldflags can set it (see source). It
// returns "" when the directory is unknown or holds no go.mod of [Module]
// any more.
func SourceDir() string {
	dir := source
	if dir == "" {
		_, file, _, ok := runtime.Caller(0)
		if !ok || !filepath.IsAbs(file) {
			return ""
		}
		// file is DIR/internal/buildinfo/buildinfo.go.
		dir = filepath.Dir(filepath.Dir(filepath.Dir(file)))
	}
	if !IsModuleDir(dir) {
		return ""
	}
	return dir
}

// IsModuleDir reports whether dir holds the go.mod of [Module].
func IsModuleDir(dir string) bool {
	raw, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	return strings.TrimSpace(modfile.ModulePath(raw)) == Module
}
