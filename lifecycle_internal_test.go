package manglecp

import (
	"fmt"
	"testing"

	"github.com/manglecp/manglecp/protocol"
)

// TestTransitions: every pair of states, allowed or refused, as
// lifecycle.go's table says; a refused move changes neither the state
// nor the manifest, an allowed one publishes the manifest of the new
// state (its status as the wire says it).
func TestTransitions(t *testing.T) {
	const (
		B = stateBooting
		R = stateReady
		G = stateDegraded
		D = stateDraining
		S = stateStopped
	)
	allowedPairs := map[[2]state]bool{
		{B, R}: true, {B, G}: true, {B, D}: true, {B, S}: true,
		{R, R}: true, {R, G}: true, {R, D}: true, {R, S}: true,
		{G, R}: true, {G, G}: true, {G, D}: true, {G, S}: true,
		{D, S}: true,
	}
	all := []state{B, R, G, D, S}
	for _, from := range all {
		for _, to := range all {
			want := allowedPairs[[2]state{from, to}]
			t.Run(fmt.Sprintf("%s->%s", from, to), func(t *testing.T) {
				if got := allowed(from, to); got != want {
					t.Fatalf("allowed = %v, want %v", got, want)
				}
				s := New(Domain{ID: "lifecycle", Description: "lifecycle test"}, nil)
				s.life.mu.Lock()
				s.state.Store(uint32(from))
				s.publishManifest(from)
				before := s.manifest.Load()
				moved := s.moveTo(to)
				s.life.mu.Unlock()
				after := s.manifest.Load()
				if moved != want {
					t.Fatalf("moveTo = %v, want %v", moved, want)
				}
				if !want {
					if state(s.state.Load()) != from || after != before {
						t.Fatalf("a refused move changed the state to %s or the manifest", state(s.state.Load()))
					}
					return
				}
				if state(s.state.Load()) != to || s.Status() != to.status() {
					t.Fatalf("state %s status %s, want %s", state(s.state.Load()), s.Status(), to)
				}
				if after.manifest.Status != to.status() {
					t.Fatalf("manifest status %s, want %s", after.manifest.Status, to.status())
				}
				if closed := !s.inflight.tryAdd(); closed != (to == D || to == S) {
					t.Fatalf("admission closed = %v in %s", closed, to)
				}
			})
		}
	}
}

// TestWireStatus: each state's manifest status; stopped says draining.
func TestWireStatus(t *testing.T) {
	for st, want := range map[state]protocol.Status{
		stateBooting: protocol.StatusBooting, stateReady: protocol.StatusReady, stateDegraded: protocol.StatusDegraded,
		stateDraining: protocol.StatusDraining, stateStopped: protocol.StatusDraining,
	} {
		if got := st.status(); got != want {
			t.Errorf("%s: %s, want %s", st, got, want)
		}
	}
}
