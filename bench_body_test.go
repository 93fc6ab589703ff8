package manglecp_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// BenchmarkBenchBody answers the bodies scripts/bench-compare.sh sends
// (scripts/bench/evaluate-*.json) through the HTTP handler `manglecp serve`
// uses, in process and without a network, with an access log written to
// io.Discard as serve writes one per request: the request path the
// side-by-side comparison measures, for a CPU profile of it:
//
//	go test -run '^$' -bench 'BenchBody/evaluate-20' -benchtime 3000x -cpuprofile cpu.prof .
//
// "kernel" is the kernel's evaluation of the same request alone.
func BenchmarkBenchBody(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: b.TempDir()}), &manglecp.Options{Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	h := transport.NewHTTPHandler(srv, nil)
	for _, name := range []string{"evaluate-20", "evaluate-4"} {
		body, err := os.ReadFile("scripts/bench/" + name + ".json")
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			benchCPU(b, func() {
				req := httptest.NewRequest(http.MethodPost, "/manglecp/evaluate", strings.NewReader(string(body)))
				req.Header.Set("Content-Type", "application/json")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			})
		})
		b.Run(name+"/kernel", func(b *testing.B) {
			benchKernel(b, srv, body)
		})
	}
	_ = protocol.TypeIntentResponse
}
