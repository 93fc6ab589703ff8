package manglecp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/manglecp/manglecp/protocol"
)

// state is where a server is in its life. Every change of state goes
// through [Server.moveTo], which checks it against transitions, and
// publishes the manifest of the new state under the same lock, so the
// manifest never says anything but the state the server is in.
//
//	booting  --Load ok--------------> ready or degraded
//	booting  --Load failed, Close---> stopped
//	booting  --Drain----------------> draining
//	ready    <-SetDegraded, Health--> degraded (and each to itself: a new reason, a reload)
//	ready, degraded --Drain---------> draining
//	ready, degraded, draining --Close--> stopped
//
// Draining and stopped are final: nothing makes the server ready again.
type state uint8

const (
	stateBooting  state = iota // New: rules not loaded; requests get server_not_ready
	stateReady                 // Load, or a degraded reason cleared
	stateDegraded              // SetDegraded, a domain part (Domain.Health), a failed reload
	stateDraining              // Drain: admitted requests finish, new ones are refused
	stateStopped               // Close, or a failed Load: nothing is served any more
)

var stateNames = [...]string{"booting", "ready", "degraded", "draining", "stopped"}

func (st state) String() string { return stateNames[st] }

// status is the state as the manifest says it (Spec 04 section 4.1). A
// stopped server says "draining": it takes no new work, for good.
func (st state) status() protocol.Status {
	switch st {
	case stateBooting:
		return protocol.StatusBooting
	case stateReady:
		return protocol.StatusReady
	case stateDegraded:
		return protocol.StatusDegraded
	default:
		return protocol.StatusDraining
	}
}

// transitions are the allowed changes of state, from -> to. A move to the
// same state is allowed only where it republishes the manifest (a new
// degraded reason, reloaded rules, a domain part's new value).
var transitions = map[state][]state{
	stateBooting:  {stateReady, stateDegraded, stateDraining, stateStopped},
	stateReady:    {stateReady, stateDegraded, stateDraining, stateStopped},
	stateDegraded: {stateReady, stateDegraded, stateDraining, stateStopped},
	stateDraining: {stateStopped},
	stateStopped:  {},
}

// allowed reports whether the lifecycle may go from one state to another.
func allowed(from, to state) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// lifecycle orders a server's changes of state: each happens under mu,
// with the reason SetDegraded was given. The state itself is
// Server.state, written under mu and read without it (Server.Status,
// request admission).
type lifecycle struct {
	mu     sync.Mutex
	reason string // SetDegraded's reason
}

// moveTo changes the state to to, when the transition is allowed, and
// publishes the manifest of the new state; it reports whether it moved.
// The caller holds s.life.mu.
func (s *Server) moveTo(to state) bool {
	from := state(s.state.Load())
	if !allowed(from, to) {
		return false
	}
	s.state.Store(uint32(to))
	if from == to || from.status() != to.status() {
		s.publishManifest(to)
	}
	if to == stateDraining || to == stateStopped {
		s.inflight.close()
	}
	return true
}

// publishManifest builds the manifest of st, stores it and tells the
// subscribers (OnManifestChange). The caller holds s.life.mu.
func (s *Server) publishManifest(st state) {
	var m protocol.Manifest
	if s.loaded.Load() {
		m = s.buildManifest(st.status())
	} else {
		m = s.baseManifest(st.status()) // no rules yet: no intents
	}
	raw, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("manglecp: manifest does not encode: %v", err)) // programmer error: manifest types are plain data
	}
	etag := `"booting"` // the booting manifest's ETag, as it always was
	if st != stateBooting {
		sum := sha256.Sum256(raw)
		etag = `"` + hex.EncodeToString(sum[:12]) + `"`
	}
	s.manifest.Store(&manifestSnapshot{manifest: m, json: raw, etag: etag})
	s.subsMu.Lock()
	for _, fn := range s.subs {
		go fn()
	}
	s.subsMu.Unlock()
}

// settle moves a loaded, serving server to ready or degraded, whichever
// its reasons say, republishing the manifest. Booting, draining and
// stopped servers stay as they are. The caller holds s.life.mu.
func (s *Server) settle() {
	switch state(s.state.Load()) {
	case stateReady, stateDegraded:
		if s.life.reason == "" && s.parts.degraded() == "" {
			s.moveTo(stateReady)
		} else {
			s.moveTo(stateDegraded)
		}
	}
}

// Status is the server's readiness state, as its manifest says it.
func (s *Server) Status() protocol.Status { return state(s.state.Load()).status() }

// SetDegraded switches the server to "degraded" (Spec 04 section 4.1):
// it keeps serving, and the manifest explains why in
// extensions["x-degraded_reason"]. An empty reason returns to "ready"
// (unless a part of the domain is degraded, see Domain.Health). While
// booting the reason is kept for when Load is done; draining is final.
func (s *Server) SetDegraded(reason string) {
	s.life.mu.Lock()
	defer s.life.mu.Unlock()
	s.life.reason = reason
	s.settle()
}

// Drain switches the server to "draining": new requests get
// server_not_ready, requests already admitted finish. Wait for them with
// [Server.Wait]. Draining is final: a later reload or SetDegraded does not
// make the server ready again.
func (s *Server) Drain() {
	s.life.mu.Lock()
	defer s.life.mu.Unlock()
	s.moveTo(stateDraining)
}

// stop moves the server to stopped (Close, a failed Load).
func (s *Server) stop() {
	s.life.mu.Lock()
	defer s.life.mu.Unlock()
	s.moveTo(stateStopped)
}
