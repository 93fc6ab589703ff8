package workspace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/protocol"
)

// Serve a directory: the rules offer read_file for the mentioned text
// file, bound to it, and the read returns its content and digest.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "project")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello\n"), 0o644)

	ws, err := workspace.Open(workspace.Config{Roots: []string{dir}})
	if err != nil {
		panic(err)
	}
	defer ws.Close()
	srv, err := manglecp.NewServer(ws.Domain(), nil)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	req, _ := protocol.NewEnvelope(protocol.TypeIntentRequest, "req-1", protocol.IntentRequest{
		Intent: protocol.Intent{Name: "read"},
		Facts:  []protocol.Fact{protocol.NewFact("mentioned", "notes.txt")},
	})
	data, _ := req.Encode()
	var ir protocol.IntentResponse
	_ = json.Unmarshal(srv.Handle(ctx, &protocol.Inbound{Data: data}).Payload, &ir)
	m := ir.MacroTools[0]
	fmt.Println(m.Name, m.InputSchema["properties"].(map[string]any)["path"].(map[string]any)["enum"])

	inv, _ := protocol.NewEnvelope(protocol.TypeInvokeRequest, "inv-1", protocol.InvokeRequest{
		MacroID: m.MacroID, Args: map[string]any{"path": "notes.txt"},
	})
	data, _ = inv.Encode()
	var out protocol.InvokeResponse
	_ = json.Unmarshal(srv.Handle(ctx, &protocol.Inbound{Data: data}).Payload, &out)
	fmt.Printf("%q %s\n", out.Result["content"], out.Result["digest"])
	// Output:
	// read_file [notes.txt]
	// "hello\n" 5891b5b522d5df08
}
