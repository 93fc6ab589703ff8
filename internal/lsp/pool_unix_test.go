//go:build unix

package lsp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/manglecp/manglecp/internal/testenv"
)

// slowSpec is the spec of a fake server whose initialize waits until
// release is called (a FIFO opened for writing: no clock involved).
func slowSpec(t *testing.T) (Spec, func()) {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "release")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	spec := fakeSpec(t, "slow")
	spec.Env = append(spec.Env, "LSP_FAKE_RELEASE="+fifo)
	return spec, func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0) // blocks until the server opens it
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

// TestPoolStartOutlivesRequest: a request that stops waiting for a slow
// start (its context ended) leaves the server starting; the next request
// gets that server, started once.
func TestPoolStartOutlivesRequest(t *testing.T) {
	spec, release := slowSpec(t)
	p := &Pool{}
	defer p.Close()
	dir := t.TempDir()
	gaveUp, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Get(gaveUp, "k", spec, dir); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with an ended context: %v", err)
	}
	if starting, _ := p.Starting("k"); !starting {
		t.Fatal("the start stopped with the request")
	}
	release()
	s, err := p.Get(context.Background(), "k", spec, dir)
	if err != nil {
		t.Fatal(err)
	}
	if gone, why := s.Exited(); gone {
		t.Fatalf("exited: %s", why)
	}
	if st, starts := p.State("k"); st != "running" || starts != 1 {
		t.Errorf("state %s, %d starts", st, starts)
	}
}

// TestPoolCloseStopsStart: Close ends a start that runs (its process
// killed) and waits for it.
func TestPoolCloseStopsStart(t *testing.T) {
	before := testenv.ChildPIDs(t)
	spec, _ := slowSpec(t)
	p := &Pool{}
	gaveUp, cancel := context.WithCancel(context.Background())
	cancel()
	p.Get(gaveUp, "k", spec, t.TempDir())
	p.Close()
	if starting, _ := p.Starting("k"); starting {
		t.Error("a start runs after Close")
	}
	var started []string
	for _, pid := range testenv.ChildPIDs(t) {
		if !slices.Contains(before, pid) {
			started = append(started, pid)
		}
	}
	testenv.WaitGone(t, started)
	if _, err := p.Get(context.Background(), "k", spec, t.TempDir()); err == nil {
		t.Error("a closed pool started a server")
	}
}
