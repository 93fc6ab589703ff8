package serverconf

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// TestEditKeyShared: two replicas of the workspace domain configured as
// `manglecp serve --domain workspace` configures them, sharing
// MANGLECP_EDIT_KEY (or, without one, the confirmation key): an edit
// previewed on one is offered and applied on the other. Without a
// configured key each replica signs with its own random key and the other
// does not offer apply_edit (before: always so, the key could not be
// configured). A key that is easy to guess is refused at start-up.
func TestEditKeyShared(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello\nworld\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const confirmKey = "shared confirmation key 0123456789"
	replica := func(t *testing.T, env cmdline.Env) *client.Session {
		t.Helper()
		d, opts, err := Configure(env, "", "", "", slog.New(slog.NewTextHandler(io.Discard, nil)), &DomainFlags{Name: "workspace", Roots: RootList{dir}})
		if err != nil {
			t.Fatal(err)
		}
		opts.ConfirmationKey = []byte(confirmKey)
		srv, err := manglecp.NewServer(d, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		c, s := transport.NewMemoryPair()
		go func() { _ = transport.ServeSession(t.Context(), srv, s, &transport.SessionOptions{Peer: "test"}) }()
		sess, err := client.NewSession(t.Context(), c, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sess.Close() })
		return sess
	}
	eval := func(t *testing.T, s *client.Session, facts ...protocol.Fact) map[string]protocol.MacroTool {
		t.Helper()
		resp, err := s.Evaluate(context.Background(), &protocol.IntentRequest{Intent: protocol.Intent{Name: "edit"}, Facts: facts,
			Options: &protocol.Options{DisclosurePreference: protocol.DisclosureFull}})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]protocol.MacroTool{}
		for _, m := range resp.MacroTools {
			out[m.Name] = m
		}
		return out
	}
	// The subtests edit one file in turn: they run one after the other.
	previewOnAApplyOnB := func(t *testing.T, env map[string]string, old, new string) (offered bool) {
		a, b := replica(t, cmdline.MapEnv(env)), replica(t, cmdline.MapEnv(env))
		facts := []protocol.Fact{protocol.NewFact("mentioned", "notes.txt")}
		pre, err := a.Invoke(context.Background(), &protocol.InvokeRequest{MacroID: eval(t, a, facts...)["preview_edit"].MacroID,
			Args: map[string]any{"path": "notes.txt", "old": old, "new": new}})
		if err != nil {
			t.Fatalf("preview on A: %v", err)
		}
		apply, ok := eval(t, b, append(facts, pre.Next.ContinuationFacts...)...)["apply_edit"]
		if !ok {
			return false
		}
		if _, err := b.Invoke(context.Background(), &protocol.InvokeRequest{MacroID: apply.MacroID, Args: map[string]any{"diff": pre.Result["diff"]}},
			client.WithConfirmation([]byte(confirmKey), time.Minute)); err != nil {
			t.Fatalf("apply on B: %v", err)
		}
		got, _ := os.ReadFile(filepath.Join(dir, "notes.txt"))
		if !strings.Contains(string(got), new) {
			t.Fatalf("not applied: %q", got)
		}
		return true
	}

	t.Run("MANGLECP_EDIT_KEY", func(t *testing.T) {
		if !previewOnAApplyOnB(t, map[string]string{"MANGLECP_EDIT_KEY": "kP3x9Qm2vZ7rT1wY8bN4-edit"}, "world", "there") {
			t.Fatal("apply_edit not offered on the other replica")
		}
	})
	t.Run("derived from the confirmation key", func(t *testing.T) {
		if !previewOnAApplyOnB(t, map[string]string{"MANGLECP_CONFIRMATION_KEY": confirmKey}, "there", "again") {
			t.Fatal("apply_edit not offered on the other replica")
		}
	})
	t.Run("no key: per process", func(t *testing.T) {
		if previewOnAApplyOnB(t, nil, "again", "never") {
			t.Fatal("apply_edit offered for another process's preview without a shared key")
		}
	})
	t.Run("weak key refused", func(t *testing.T) {
		env := cmdline.MapEnv(map[string]string{"MANGLECP_EDIT_KEY": "aaaaaaaaaaaaaaaa"})
		_, _, err := Configure(env, "", "", "", slog.New(slog.NewTextHandler(io.Discard, nil)), &DomainFlags{Name: "workspace", Roots: RootList{dir}})
		if err == nil || !strings.Contains(err.Error(), "MANGLECP_EDIT_KEY") {
			t.Fatalf("configure = %v, want the edit key refused", err)
		}
	})
}
