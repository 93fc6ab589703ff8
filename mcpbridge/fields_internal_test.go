package mcpbridge

import "testing"

// TestSignatureShowsItemFields: an array whose items are objects shows
// their fields, required ones starred (issue 38: the gateway's
// edit_file shows edits' oldText and newText).
func TestSignatureShowsItemFields(t *testing.T) {
	schema := map[string]any{"type": "object", "required": []any{"path", "edits"}, "properties": map[string]any{
		"path": map[string]any{"type": "string"},
		"edits": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []any{"oldText", "newText"},
			"properties": map[string]any{"oldText": map[string]any{"type": "string"}, "newText": map[string]any{"type": "string"}}}},
		"dryRun": map[string]any{"type": "boolean"},
	}}
	want := "fs_edit_file(edits*: {newText*: string, oldText*: string}[], path*: string, dryRun: boolean)"
	if got := toolSignature("fs_edit_file", schema); got != want {
		t.Errorf("signature\n got %s\nwant %s", got, want)
	}
}
