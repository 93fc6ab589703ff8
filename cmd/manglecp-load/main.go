// Command manglecp-load drives an in-process MangleCP server (the browser
// domain) with a fixed concurrency for a fixed time over HTTP, WebSocket or
// stdio and reports throughput, p50/p99 latency, status counts, peak RSS
// and goroutines before and after. Exit status 1 when any answer was not
// what its request expects.
//
//	manglecp-load -transport http -c 64 -d 60s -mix mixed
//	manglecp-load -target http://127.0.0.1:8080 -c 64 -d 60s -mix evaluate-invoke
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/manglecp/manglecp/cmd/manglecp-load/internal/load"
)

func main() {
	var cfg load.Config
	flag.StringVar(&cfg.Transport, "transport", "http", "http, ws or stdio")
	flag.IntVar(&cfg.Concurrency, "c", 16, "concurrent clients")
	flag.DurationVar(&cfg.Duration, "d", 10*time.Second, "duration")
	flag.IntVar(&cfg.Pipeline, "pipeline", 1, "requests in flight per client (ws and stdio)")
	flag.StringVar(&cfg.Mix, "mix", "evaluate", "evaluate (valid evaluations), mixed (evaluations, invocations, facts with the wrong arity, oversize messages) or evaluate-invoke (each evaluation with unique facts, then its invocation on a second connection)")
	flag.StringVar(&cfg.Target, "target", "", "drive the server or load balancer at this base URL (http://HOST:PORT) instead of an in-process server (-transport http)")
	asJSON := flag.Bool("json", false, "print the report as JSON")
	flag.Parse()
	rep, err := load.Run(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "manglecp-load:", err)
		os.Exit(2)
	}
	if *asJSON {
		_ = json.NewEncoder(os.Stdout).Encode(rep)
	} else {
		fmt.Print(rep.Format())
	}
	if rep.Unexpected > 0 {
		os.Exit(1)
	}
}
