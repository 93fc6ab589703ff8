package transport_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// recorder records every message's bytes, which the Handler contract
// lets the binding reuse once Handle has returned.
type recorder struct {
	transport.HandlerDefaults
	got [][]byte
}

func (r *recorder) Handle(_ context.Context, in *protocol.Inbound) *protocol.Envelope {
	r.got = append(r.got, in.Data)
	return protocol.ErrorEnvelope("", protocol.Errorf(protocol.CodeRateLimited, "no"))
}

func (r *recorder) ManifestJSON() ([]byte, string) { return []byte(`{"status":"ready"}`), `"1"` }

func (r *recorder) MaxMessageBytes() int64 { return 1 << 20 }

// TestBodiesReused: Handle borrows a body (the Handler contract), so the
// HTTP binding reads a later body into the buffer an earlier request gave
// back, and reads it as sent.
func TestBodiesReused(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(transport.NewHTTPHandler(rec, nil))
	defer srv.Close()
	bodies := [][]byte{bytes.Repeat([]byte("a"), 5000), bytes.Repeat([]byte("b"), 4000)}
	var copies [][]byte
	for _, body := range bodies {
		resp, err := srv.Client().Post(srv.URL+"/manglecp/evaluate", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("the fake handler's error answered 200")
		}
		copies = append(copies, append([]byte(nil), rec.got[len(rec.got)-1]...))
	}
	if len(rec.got) != 2 {
		t.Fatalf("%d messages handled", len(rec.got))
	}
	if &rec.got[0][0] != &rec.got[1][0] {
		t.Error("the second body was not read into the first one's buffer")
	}
	for i := range bodies {
		if !bytes.Equal(copies[i], bodies[i]) {
			t.Errorf("body %d was not read as sent", i)
		}
	}
}
