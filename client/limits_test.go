package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/protocol"
)

// TestMaxReplyBytes: over HTTP the client stops reading a reply at
// Options.MaxReplyBytes and fails with a local message_too_large, for the
// manifest and for an answer.
func TestMaxReplyBytes(t *testing.T) {
	const limit = 1 << 20
	var sent atomic.Int64
	var hugeManifest atomic.Bool
	manifest := func() []byte {
		env, _ := protocol.NewEnvelope(protocol.TypeManifest, "", protocol.Manifest{
			ServerName: "big", Status: protocol.StatusReady, Protocol: protocol.ProtocolInfo{Manglecp: protocol.Version},
			Endpoints: &protocol.Endpoints{IntentEval: "/eval", MacroInvoke: "/invoke"}})
		raw, _ := env.Encode()
		return raw
	}()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && !hugeManifest.Load() {
			_, _ = w.Write(manifest)
			return
		}
		chunk := []byte(strings.Repeat("a", 64<<10))
		_, _ = io.WriteString(w, `{"type":"x","payload":"`)
		for range (100 << 20) / len(chunk) {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	check := func(t *testing.T, err error, what string) {
		t.Helper()
		var ce *client.Error
		if !errors.As(err, &ce) || !ce.Local || ce.Payload.Code != protocol.CodeMessageTooLarge || !strings.Contains(ce.Payload.Message, what) {
			t.Fatalf("error %v, want a local message_too_large about the %s", err, what)
		}
		if n := sent.Swap(0); n > 32<<20 {
			t.Errorf("the server sent %d bytes of a 100 MB reply", n)
		}
	}
	opts := &client.Options{MaxReplyBytes: limit, MaxAttempts: 1, SkipFactValidation: true}

	hugeManifest.Store(true)
	_, err := client.Dial(context.Background(), srv.URL, opts)
	check(t, err, "manifest")

	hugeManifest.Store(false)
	s, err := client.Dial(context.Background(), srv.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Evaluate(context.Background(), &protocol.IntentRequest{Intent: protocol.Intent{Name: "x"}})
	check(t, err, "answer")
}
