package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Builds builds the project's commands for the tests of one test binary:
// each at most once, into one temporary directory that [Builds.Close]
// removes. A package whose tests run a command keeps one Builds and closes
// it from TestMain:
//
//	var builds testenv.Builds
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		builds.Close()
//		os.Exit(code)
//	}
//
// The zero value is ready to use and safe for concurrent use.
type Builds struct {
	mu    sync.Mutex
	dir   string
	built map[string]*build
}

type build struct {
	once sync.Once
	path string
	err  error
}

// Manglecp builds ./cmd/manglecp; see [Builds.Command].
func (b *Builds) Manglecp(t testing.TB) string {
	t.Helper()
	return b.Command(t, "cmd/manglecp")
}

// Command builds the main package at pkg, a directory relative to the
// module root such as "cmd/manglecp", and returns the executable's path.
// Under -short it skips t: building takes seconds. A failed build fails t
// with the compiler's output. $MANGLECP_TEST_BIN_<NAME> (NAME the last
// element of pkg, upper case, '-' as '_'; e.g. MANGLECP_TEST_BIN_MANGLECP)
// names a prebuilt executable to use instead, for measuring another build
// against the same tests.
func (b *Builds) Command(t testing.TB, pkg string) string {
	t.Helper()
	name := filepath.Base(pkg)
	env := "MANGLECP_TEST_BIN_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	if p := os.Getenv(env); p != "" {
		return p
	}
	if testing.Short() {
		t.Skip("builds " + pkg + " (not under -short)")
	}
	b.mu.Lock()
	if b.built == nil {
		b.built = map[string]*build{}
	}
	one, ok := b.built[pkg]
	if !ok {
		one = &build{}
		b.built[pkg] = one
	}
	if b.dir == "" {
		dir, err := os.MkdirTemp("", "manglecp-testbin-")
		if err != nil {
			b.mu.Unlock()
			t.Fatalf("build %s: %v", pkg, err)
		}
		b.dir = dir
	}
	dir := b.dir
	b.mu.Unlock()
	one.once.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			one.err = err
			return
		}
		one.path = filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", one.path, "./"+filepath.ToSlash(pkg))
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			one.err = fmt.Errorf("go build ./%s: %v\n%s", pkg, err, out)
		}
	})
	if one.err != nil {
		t.Fatal(one.err)
	}
	return one.path
}

// Close removes what the builds wrote. It is safe to call more than once
// and on a Builds that built nothing.
func (b *Builds) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
		b.dir = ""
		b.built = nil
	}
}

// moduleRoot is the directory of the go.mod above the working directory
// (a test runs in its package's directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the test's directory")
		}
		dir = parent
	}
}
