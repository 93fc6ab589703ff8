// Command modproxy writes a Go module proxy directory (GOPROXY=file://DIR)
// that serves this repository's module at one version, built from the
// commit a tag would name (git HEAD) as proxy.golang.org builds a module
// zip from a tag: scripts/checks/release.sh installs the command
// from it offline.
//
//	go run ./scripts/checks/modproxy -version v0.1.0 -out DIR
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

func main() {
	version := flag.String("version", "", "the version to serve, e.g. v0.1.0")
	out := flag.String("out", "", "the proxy directory to write")
	repo := flag.String("repo", ".", "the repository's root (a git checkout)")
	flag.Parse()
	if err := write(*repo, *version, *out); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

func write(repo, version, out string) error {
	if !semver.IsValid(version) || out == "" {
		return fmt.Errorf("want -version vX.Y.Z and -out DIR")
	}
	m := module.Version{Path: "github.com/manglecp/manglecp", Version: version}
	esc, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	dir := filepath.Join(out, esc, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	mod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	if err != nil {
		return err
	}
	info, _ := json.Marshal(map[string]any{"Version": version, "Time": time.Now().UTC().Format(time.RFC3339)})
	for name, data := range map[string][]byte{"list": []byte(version + "\n"), version + ".info": info, version + ".mod": mod} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	f, err := os.Create(filepath.Join(dir, version+".zip"))
	if err != nil {
		return err
	}
	// The files of the commit (git archive HEAD), as a tag would have
	// them; a git worktree is no directory x/mod's CreateFromVCS knows.
	src, err := os.MkdirTemp("", "modproxy-")
	if err != nil {
		f.Close()
		return err
	}
	defer os.RemoveAll(src)
	archive := exec.Command("sh", "-c", `git -C "$1" archive --format=tar HEAD | tar -x -C "$2"`, "sh", repo, src)
	archive.Stderr = os.Stderr
	if err := archive.Run(); err != nil {
		f.Close()
		return fmt.Errorf("git archive HEAD: %w", err)
	}
	if err := zip.CreateFromDir(f, m, src); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
