package client

import (
	"encoding/json"

	"github.com/manglecp/manglecp/protocol"
)

// checkFacts checks an intent request's facts the way the server does
// before evaluating (Spec 10 section 5.2; the server's decodeIntent): the
// fact count against limits.max_facts_per_request, each fact as it will be
// encoded on the wire against the facts_profile with
// [protocol.ValidateFacts], and the intent's required_facts. It returns the
// error the server would answer, or nil. A booting server's manifest has no
// profile yet, so nothing is checked then; neither is a request without an
// intent name, which the server refuses as malformed before it looks at
// facts.
func checkFacts(m *protocol.Manifest, req *protocol.IntentRequest) *protocol.Error {
	if m == nil || m.Status == protocol.StatusBooting || req.Intent.Name == "" {
		return nil
	}
	if lim, n := m.Limits.MaxFactsPerRequest, int64(len(req.Facts)); lim > 0 && n > lim {
		return protocol.TooManyFacts(n, lim)
	}
	// Validate what the server will read: each fact encoded and decoded
	// again, so Go values (int, float64, ...) become the JSON values the
	// server checks.
	raws := make([]json.RawMessage, len(req.Facts))
	for i := range req.Facts {
		raw, err := json.Marshal(req.Facts[i])
		if err != nil {
			return nil // the request cannot be encoded; sending reports it
		}
		raws[i] = raw
	}
	return protocol.CheckIntentFacts(raws, req.Intent.Name, &m.FactsProfile, m.Intents).Err()
}
