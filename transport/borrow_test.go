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

// keeper keeps every message's bytes, as a handler that is not a
// transport.DataBorrower may; borrower says it keeps nothing.
type keeper struct{ kept [][]byte }

func (k *keeper) Handle(_ context.Context, in *protocol.Inbound) *protocol.Envelope {
	k.kept = append(k.kept, in.Data)
	return protocol.ErrorEnvelope("", protocol.Errorf(protocol.CodeRateLimited, "no"))
}

func (k *keeper) ManifestJSON() ([]byte, string) { return []byte(`{"status":"ready"}`), `"1"` }

func (k *keeper) MaxMessageBytes() int64 { return 1 << 20 }

type borrower struct{ *keeper }

func (borrower) BorrowsData() bool { return true }

// TestBodiesReusedForBorrowersOnly: the HTTP binding reads a body into a
// buffer an earlier request gave back only for a handler that borrows the
// bytes; a handler that keeps them finds them intact after later requests.
func TestBodiesReusedForBorrowersOnly(t *testing.T) {
	k, b := &keeper{}, borrower{&keeper{}}
	for _, tc := range []struct {
		name   string
		h      transport.Handler
		k      *keeper
		reused bool
	}{
		{"keeper", k, k, false},
		{"borrower", b, b.keeper, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(transport.NewHTTPHandler(tc.h, nil))
			defer srv.Close()
			bodies := [][]byte{bytes.Repeat([]byte("a"), 5000), bytes.Repeat([]byte("b"), 4000)}
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
			}
			kept := tc.k.kept
			if len(kept) != 2 {
				t.Fatalf("%d messages handled", len(kept))
			}
			if same := &kept[0][0] == &kept[1][0]; same != tc.reused {
				t.Fatalf("second body read into the first one's buffer: %v, want %v", same, tc.reused)
			}
			if !tc.reused && !bytes.Equal(kept[0], bodies[0]) {
				t.Fatal("a kept body was overwritten by a later request")
			}
			if !bytes.Equal(kept[1], bodies[1]) {
				t.Fatal("the second body was not read as sent")
			}
		})
	}
}
