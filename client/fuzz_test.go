package client_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// FuzzManifest feeds arbitrary bytes to a client as the first message of a
// session, where it expects the manifest (and as a pushed manifest after
// it). The client never panics; it either refuses the session with an
// error or holds a manifest that survives encoding and decoding unchanged.
func FuzzManifest(f *testing.F) {
	f.Add([]byte(`{"type":"manifest","id":null,"manglecp":"2026-02-draft","payload":{"server_name":"s","server_version":"1","protocol":{"manglecp":"2026-02-draft","conformance_level":3},"status":"ready","domain":{"id":"d","description":"x"},"intents":[],"facts_profile":{"time_formats":["rfc3339"]},"capabilities":{"temporal":true,"aggregation":true,"external_predicates":[],"rule_submission":false,"subscriptions":false,"named_args":true},"limits":{"max_message_bytes":16777216,"max_facts_per_request":10,"max_derived_facts":10},"auth":{"required":false,"token_url":null},"extensions":{}}}`))
	f.Add([]byte(`{"type":"manifest","id":null,"manglecp":"2026-02-draft","payload":{"status":"booting","facts_profile":{"predicates":[{"predicate":"p","arity":-1}]}}}`))
	f.Add([]byte(`{"type":"intent_response","id":"x","manglecp":"2026-02-draft","payload":{}}`))
	f.Add([]byte(`{"type":"manifest","id":null,"manglecp":"1999-01-draft","payload":[]}`))
	f.Add([]byte(`not json`))
	f.Add([]byte(`{"type":"manifest","id":null,"manglecp":"2026-02-draft","payload":{"limits":{"max_message_bytes":1e400}}}`))
	f.Fuzz(func(t *testing.T, first []byte) {
		clientSide, serverSide := transport.NewMemoryPair()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		go func() {
			_ = serverSide.WriteMessage(ctx, first)
			_ = serverSide.WriteMessage(ctx, first) // again, as a pushed manifest
			_ = serverSide.Close()
		}()
		s, err := client.NewSession(ctx, clientSide, &client.Options{})
		if err != nil {
			return // refused: fine, as long as it did not panic
		}
		defer s.Close()
		m := s.Manifest()
		if m == nil {
			t.Fatal("a session without a manifest")
		}
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("the accepted manifest does not encode: %v", err)
		}
		var back protocol.Manifest
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatalf("the accepted manifest does not decode again: %v\n%s", err, raw)
		}
		again, _ := json.Marshal(&back)
		if !reflect.DeepEqual(raw, again) {
			t.Fatalf("manifest changed through a round trip:\n%s\n%s", raw, again)
		}
	})
}
