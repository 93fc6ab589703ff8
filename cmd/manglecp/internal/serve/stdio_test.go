package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestStdioBinary runs the real binary with --stdio: stdout carries nothing
// but protocol lines, the manifest first; logs go to stderr; at EOF the
// pending answers are flushed and the process exits 0.
func TestStdioBinary(t *testing.T) {
	t.Parallel()
	bin := builds.Manglecp(t)
	cmd := exec.Command(bin, "serve", "--stdio")
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"type":"intent_request","id":"a","manglecp":"2026-02-draft","payload":{"intent":{"name":"observe"},"facts":[{"pred":"current_url","args":["https://x"]}]}}`,
		`not json`,
		`{"type":"intent_request","id":"b","manglecp":"2026-02-draft","payload":{"intent":{"name":"diagnose_error"},"facts":[{"pred":"current_url","args":["https://x"]}]}}`,
	}, "\n") + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("exit: %v\nstderr:\n%s", err, stderr.String())
	}
	var types, ids []string
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var env struct {
			Type     string  `json:"type"`
			ID       *string `json:"id"`
			Manglecp string  `json:"manglecp"`
		}
		if err := json.Unmarshal(sc.Bytes(), &env); err != nil || env.Manglecp != "2026-02-draft" {
			t.Fatalf("stdout holds a non-protocol line: %q", sc.Text())
		}
		types = append(types, env.Type)
		id := "null"
		if env.ID != nil {
			id = *env.ID
		}
		ids = append(ids, id)
	}
	if len(types) != 4 || types[0] != "manifest" {
		t.Fatalf("stdout messages %v %v", types, ids)
	}
	got := strings.Join(ids[1:], ",")
	for _, want := range []string{"a", "b", "null"} { // "not json" is answered with id null
		if !strings.Contains(got, want) {
			t.Errorf("answers %v lack %s", ids, want)
		}
	}
	if !strings.Contains(stderr.String(), "serving MangleCP over stdio") {
		t.Errorf("stderr: %s", stderr.String())
	}
}
