package mcpbridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/protocol"
)

// TestConfirmationQuestionExpires (issue 30): a question the bridge asked
// is answered within its ten minutes and the tool runs; answered after
// them, it is refused and the tool does not run. The bridge's clock moves
// while the user "thinks", instead of the test waiting ten minutes.
func TestConfirmationQuestionExpires(t *testing.T) {
	key := []byte("a confirmation key shared with the server")
	for _, tc := range []struct {
		think time.Duration
		want  protocol.Code // "" means it ran
	}{
		{10*time.Minute - time.Second, ""},
		{10 * time.Minute, protocol.CodeBridgeConfirmationDeclined},
	} {
		t.Run(tc.think.String(), func(t *testing.T) {
			fake := newFake()
			fake.setEvaluate(selects(tool("write_report", true)))
			clock := newClock()
			elicit := func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				clock.advance(tc.think)
				return accept(ctx, r)
			}
			h := newHarness(t, fake, &mcpbridge.Options{ConfirmationKey: key}, hostOptions{elicit: elicit})
			mcpbridge.SetClock(h.bridge, clock.now)
			h.call(t, "diagnose", diagnoseArgs)
			res := h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "write_report", "arguments": map[string]any{"target": "r42"}})
			if tc.want == "" {
				if res.IsError || fake.invokeCount() != 1 {
					t.Fatalf("answered in time: %s, %d invocations", text(res), fake.invokeCount())
				}
				return
			}
			if e := errorOf(t, res); e.Code != tc.want {
				t.Errorf("answered too late: %s, want %s", e.Code, tc.want)
			}
			if n := fake.invokeCount(); n != 0 {
				t.Errorf("answered too late, the tool ran %d times", n)
			}
		})
	}
}
