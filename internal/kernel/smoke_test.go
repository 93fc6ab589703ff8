package kernel

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

func TestSmoke(t *testing.T) {
	p, err := Load(Layer{Name: "policy", FS: os.DirFS("../../domains/browser/rules/policy")}, Layer{Name: "domain", FS: os.DirFS("../../domains/browser/rules/domain")})
	if err != nil {
		t.Fatal(err)
	}
	facts := []protocol.Fact{
		protocol.NewFact("current_url", "https://app.example.com"),
		protocol.NewFact("console_event", "s1", "error", "TypeError: x", json.Number("1771510200000")),
		protocol.NewFact("net_request", "s1", "r42", "GET", "https://api/users", json.Number("1771510199000")),
		protocol.NewFact("net_response", "s1", "r42", json.Number("404"), json.Number("1771510199500")),
	}
	res, err := p.Evaluate(context.Background(), Request{Intent: "diagnose_error", Facts: facts, EvalTime: time.Now(), MaxFactsCreated: 10000})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(res, "", " ")
	t.Logf("%s", b)
	_, err = p.Evaluate(context.Background(), Request{Intent: "diagnose_error", Facts: facts, EvalTime: time.Now(), MaxFactsCreated: 10})
	t.Logf("%v", err)
}
