package conformance_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"os"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/conformance"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/transport"
)

// Run the determinism and gas tests of Spec 10 sections 6.2 and 6.3
// against the default domain served over HTTP, with the built-in browser
// fixture.
func ExampleRun() {
	dir, _ := os.MkdirTemp("", "reports")
	defer os.RemoveAll(dir)
	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: dir}), nil)
	if err != nil {
		log.Fatal(err)
	}
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	defer hs.Close()

	fixture, err := conformance.LoadFixture("browser")
	if err != nil {
		log.Fatal(err)
	}
	rep, err := conformance.Run(context.Background(), hs.URL, &conformance.Options{
		Fixture: fixture,
		Checks:  []string{"evaluation.determinism", "evaluation.gas"},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range rep.Checks {
		fmt.Println(c.Status, c.ID, c.Spec)
	}
	fmt.Println("ok:", rep.OK())
	// Output:
	// PASS evaluation.determinism Spec 10 6.2
	// PASS evaluation.gas Spec 10 6.3
	// ok: true
}
