package chrome

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/manglecp/manglecp/internal/testenv"
)

// BenchmarkOpenBesideScreenshots measures issue 35 item 13 on real
// Chromium: one identity ("ada") opens a page while another ("eve") has 8
// slow screenshots going (a page that answers after 2 s, with a
// screenshot; MaxPages 4, so 4 run and 4 wait). It reports ada's open
// latency (median over the iterations, ms/open) with the fair slots
// ("fair": each call carries its identity) and with first-come slots
// ("fifo": the same calls without identities, which is what the slots were
// before they were shared per identity: one queue in arrival order), and
// ("alone") without eve's screenshots.
//
//	go test -run '^$' -bench OpenBesideScreenshots -benchtime 5x ./domains/browser/chrome/
func BenchmarkOpenBesideScreenshots(bm *testing.B) {
	path := loadChromium(bm)
	const slow = 2 * time.Second
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select { // the page answers after slow, or when the browser gives up
		case <-time.After(slow):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<title>slow</title><h1>A report</h1><p>It took a while.</p>`))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<title>fast</title><h1>Home</h1><a href="/slow">report</a>`))
	})
	ts := httptest.NewServer(mux)
	bm.Cleanup(ts.Close)
	for _, mode := range []string{"alone", "fair", "fifo"} {
		bm.Run(mode, func(bm *testing.B) {
			b := New(Budgeted(Config{Path: path, MaxPages: 4, MaxQueued: 8, QueueWait: testenv.Budget(60 * time.Second)}))
			bm.Cleanup(func() { _ = b.Close() })
			ctx := context.Background()
			who := func(id string) context.Context {
				if mode == "fifo" {
					return ctx
				}
				return WithIdentity(ctx, id)
			}
			if _, err := b.Run(ctx, Task{URL: ts.URL + "/"}); err != nil { // start the browser
				bm.Fatal(err)
			}
			shots := 8
			if mode == "alone" {
				shots = 0
			}
			var took []time.Duration
			busy := 0
			bm.ResetTimer()
			for range bm.N {
				var wg sync.WaitGroup
				for range shots {
					wg.Go(func() {
						if _, err := b.Run(who("eve"), Task{URL: ts.URL + "/slow", Screenshot: true}); err != nil {
							bm.Log("eve's screenshot:", err)
						}
					})
				}
				// eve's 8 calls are in: 4 running, 4 waiting.
				if mode != "alone" && !testenv.Poll(30*time.Second, func() bool { return b.slots.waiting() == 4 }) {
					bm.Fatalf("eve's calls did not queue: %d waiting", b.slots.waiting())
				}
				start := time.Now()
				_, err := b.Run(who("ada"), Task{URL: ts.URL + "/"})
				took = append(took, time.Since(start))
				if err != nil {
					busy++
					bm.Log("ada's open:", err)
				}
				wg.Wait()
			}
			bm.StopTimer()
			slices.Sort(took)
			bm.ReportMetric(float64(took[len(took)/2])/float64(time.Millisecond), "ms/open")
			bm.ReportMetric(float64(took[len(took)-1])/float64(time.Millisecond), "max-ms/open")
			bm.ReportMetric(float64(busy), "refused")
			bm.Logf("%s: ada's opens %v", mode, took)
		})
	}
}
