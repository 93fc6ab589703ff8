package manglecp

import (
	"strings"
	"sync"
)

// HealthReport is how a domain reports the health of a part of it (see
// Domain.Health): part names the manifest extension that describes it
// ("x-..."), value is the extension's new value, and a non-empty degraded
// holds the server "degraded" with that reason (in
// extensions["x-degraded_reason"], and /readyz answers 503) until the
// part is reported again with "". It is safe for concurrent use.
type HealthReport func(part string, value any, degraded string)

// domainParts holds the parts a domain reported through its HealthReport.
type domainParts struct {
	mu    sync.Mutex
	parts map[string]partState
}

type partState struct {
	value    any
	degraded string
}

func (p *domainParts) set(part string, value any, degraded string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.parts == nil {
		p.parts = map[string]partState{}
	}
	p.parts[part] = partState{value, degraded}
}

// degraded joins the reasons of the degraded parts, in name order; "" when
// none is.
func (p *domainParts) degraded() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var reasons []string
	for _, name := range sortedKeys(p.parts) {
		if r := p.parts[name].degraded; r != "" {
			reasons = append(reasons, r)
		}
	}
	return strings.Join(reasons, "; ")
}

// apply sets the reported parts' extensions in ext.
func (p *domainParts) apply(ext map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, st := range p.parts {
		ext[name] = st.value
	}
}

// reportPart is the HealthReport NewServer gives the domain.
func (s *Server) reportPart(part string, value any, degraded string) {
	s.life.mu.Lock()
	defer s.life.mu.Unlock()
	s.parts.set(part, value, degraded)
	s.settle() // the status and manifest again, with the part
}

// degradedReason is why the server is degraded: the reason SetDegraded
// was given and the domain's degraded parts. The caller holds s.life.mu.
func (s *Server) degradedReason() string {
	reason := s.life.reason
	reasons := []string{}
	if reason != "" {
		reasons = append(reasons, reason)
	}
	if parts := s.parts.degraded(); parts != "" {
		reasons = append(reasons, parts)
	}
	return strings.Join(reasons, "; ")
}
