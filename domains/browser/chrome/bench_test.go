package chrome_test

import (
	"context"
	"testing"

	"github.com/manglecp/manglecp/domains/browser/chrome"
)

// BenchmarkRun: one warm run (fresh browser context, load, settle,
// inspect, close) of the test app's page, whose fetch answers 404.
func BenchmarkRun(b *testing.B) {
	path := needChromiumB(b)
	ts := app(b)
	br := chrome.New(chrome.Config{Path: path})
	defer br.Close()
	if _, err := br.Run(context.Background(), chrome.Task{URL: ts.URL + "/"}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := br.Run(context.Background(), chrome.Task{URL: ts.URL + "/"}); err != nil {
			b.Fatal(err)
		}
	}
}
