package testenv

import (
	"context"
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
// it from TestMain, where it may also start the builds its tests need, so
// that they run beside the tests that need none:
//
//	var builds testenv.Builds
//
//	func TestMain(m *testing.M) {
//		flag.Parse()
//		builds.Start("cmd/manglecp")
//		code := m.Run()
//		builds.Close()
//		os.Exit(code)
//	}
//
// The executables are built without symbol table and DWARF (-ldflags=-s
// -w): linking is most of a build, and a test reads no debug information.
// The zero value is ready to use and safe for concurrent use.
type Builds struct {
	mu     sync.Mutex
	dir    string
	built  map[string]*build
	ctx    context.Context // ends at Close: a build under way stops
	cancel context.CancelFunc
	wg     sync.WaitGroup // builds started by Start
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

// binEnv is the variable naming a prebuilt executable for pkg.
func binEnv(pkg string) string {
	return "MANGLECP_TEST_BIN_" + strings.ToUpper(strings.ReplaceAll(filepath.Base(pkg), "-", "_"))
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
	if p := os.Getenv(binEnv(pkg)); p != "" {
		return p
	}
	if testing.Short() {
		t.Skip("builds " + pkg + " (not under -short)")
	}
	one, err := b.get(pkg)
	if err != nil {
		t.Fatalf("build %s: %v", pkg, err)
	}
	if one.err != nil {
		t.Fatal(one.err)
	}
	return one.path
}

// Start starts building pkg in the background, unless it is prebuilt
// ($MANGLECP_TEST_BIN_<NAME>) or the tests run under -short (call
// flag.Parse first); [Builds.Command] then waits for it. Close stops a
// build still under way.
func (b *Builds) Start(pkg string) {
	if os.Getenv(binEnv(pkg)) != "" || testing.Short() {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		_, _ = b.get(pkg)
	}()
}

// get builds pkg once and returns its build.
func (b *Builds) get(pkg string) (*build, error) {
	b.mu.Lock()
	if b.built == nil {
		b.built = map[string]*build{}
		b.ctx, b.cancel = context.WithCancel(context.Background())
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
			return nil, err
		}
		b.dir = dir
	}
	dir, ctx := b.dir, b.ctx
	b.mu.Unlock()
	one.once.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			one.err = err
			return
		}
		one.path = filepath.Join(dir, filepath.Base(pkg))
		cmd := exec.CommandContext(ctx, "go", "build", "-ldflags=-s -w", "-o", one.path, "./"+filepath.ToSlash(pkg))
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			one.err = fmt.Errorf("go build ./%s: %v\n%s", pkg, err, out)
		}
	})
	return one, nil
}

// Close stops the builds still under way and removes what the builds
// wrote. It is safe to call more than once and on a Builds that built
// nothing.
func (b *Builds) Close() {
	b.mu.Lock()
	if b.cancel != nil {
		b.cancel()
	}
	b.mu.Unlock()
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
		b.dir = ""
	}
	b.built, b.ctx, b.cancel = nil, nil, nil
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
