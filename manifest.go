package manglecp

import (
	"encoding/json"

	"github.com/manglecp/manglecp/protocol"
)

// manifestSnapshot is one version of the manifest: the value, its JSON
// payload and its ETag, swapped whole when the status or the rules change.
type manifestSnapshot struct {
	manifest protocol.Manifest
	json     []byte
	etag     string
}

// Manifest returns a copy of the current manifest.
func (s *Server) Manifest() protocol.Manifest {
	var m protocol.Manifest
	_ = json.Unmarshal(s.manifest.Load().json, &m)
	return m
}

// ManifestJSON returns the manifest payload as JSON and its ETag. The bytes
// are shared: do not modify them.
func (s *Server) ManifestJSON() (payload []byte, etag string) {
	snap := s.manifest.Load()
	return snap.json, snap.etag
}

// ManifestEnvelope returns the manifest message (id null).
func (s *Server) ManifestEnvelope() *protocol.Envelope {
	raw, _ := s.ManifestJSON()
	return &protocol.Envelope{Type: protocol.TypeManifest, Version: protocol.Version, Payload: raw}
}

// SkillJSON returns a skill of the domain's catalogue as JSON, for clients
// fetching referenced skills.
func (s *Server) SkillJSON(id string) ([]byte, bool) {
	p := s.prog.Load()
	if p == nil { // booting
		return nil, false
	}
	sk, ok := p.Skill(id)
	if !ok {
		return nil, false
	}
	raw, err := json.Marshal(sk)
	return raw, err == nil
}

func (s *Server) buildManifest(st protocol.Status) protocol.Manifest {
	m := s.baseManifest(st)
	s.parts.apply(m.Extensions)
	if reason := s.degradedReason(); reason != "" && st == protocol.StatusDegraded {
		m.Extensions["x-degraded_reason"] = reason
	}
	p := s.prog.Load()
	m.Intents = p.Intents()
	m.FactsProfile = p.FactsProfile()
	m.Capabilities.ExternalPredicates = s.externalDecls()
	return m
}

// baseManifest is the part of the manifest that needs no loaded rules.
func (s *Server) baseManifest(st protocol.Status) protocol.Manifest {
	l := s.opts.Limits
	m := protocol.Manifest{
		ServerName:    s.opts.ServerName,
		ServerVersion: s.opts.ServerVersion,
		Protocol: protocol.ProtocolInfo{
			Manglecp:          protocol.Version,
			SupportedVersions: protocol.SupportedVersions(),
			ConformanceLevel:  ConformanceLevel,
		},
		Status: st,
		Domain: protocol.DomainInfo{ID: s.domain.ID, Description: s.domain.Description, Categories: s.domain.Categories},
		Endpoints: &protocol.Endpoints{
			IntentEval:  s.opts.BasePath + "/evaluate",
			MacroInvoke: s.opts.BasePath + "/invoke",
		},
		Intents:      []protocol.IntentDecl{},
		FactsProfile: protocol.FactsProfile{TimeFormats: []string{"rfc3339", "epoch_ms"}},
		Capabilities: protocol.Capabilities{
			Temporal:           true,
			Aggregation:        true,
			ExternalPredicates: []protocol.ExternalPredicate{},
			NamedArgs:          true,
		},
		Limits: protocol.Limits{
			MaxMessageBytes:     l.MaxMessageBytes,
			MaxFactsPerRequest:  l.MaxFactsPerRequest,
			MaxDerivedFacts:     l.MaxDerivedFacts,
			MaxIntervalsPerAtom: l.MaxIntervalsPerAtom,
			MaxComputeMS:        l.MaxComputeMS,
		},
		Auth: protocol.AuthInfo{Required: s.AuthRequired()},
		Extensions: map[string]any{
			// Referenced skills (Spec 06 section 4.4) are served here over HTTP.
			"x-skills_endpoint": s.opts.BasePath + "/skills/{skill_id}",
			// The WebSocket binding (Spec 02 section 4.1) on the same listener.
			"x-websocket_endpoint": s.opts.BasePath + "/ws",
			// The work budget of one evaluation (Options.Limits.MaxEvaluationWork).
			"x-max_evaluation_work": l.MaxEvaluationWork,
		},
	}
	for k, v := range s.domain.Extensions {
		if _, taken := m.Extensions[k]; !taken {
			m.Extensions[k] = v
		}
	}
	if m.Auth.Required {
		m.Auth.Schemes = []string{protocol.SchemeBearer, protocol.SchemeAPIKey}
		if s.opts.OAuth != nil {
			m.Auth.Schemes = append(m.Auth.Schemes, protocol.SchemeOAuth2)
			if s.opts.OAuth.TokenURL != "" {
				u := s.opts.OAuth.TokenURL
				m.Auth.TokenURL = &u
			}
		}
	}
	return m
}

func (s *Server) externalDecls() []protocol.ExternalPredicate {
	out := []protocol.ExternalPredicate{}
	for _, name := range sortedKeys(s.domain.External) {
		e := s.domain.External[name]
		out = append(out, protocol.ExternalPredicate{Predicate: name, Arity: e.Arity, Description: e.Description, Deterministic: e.Deterministic})
	}
	return out
}
