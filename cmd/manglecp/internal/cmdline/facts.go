package cmdline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/manglecp/manglecp/protocol"
)

// ReadFacts reads a JSON array of facts, or an object whose only field is
// a "facts" array, from a file or "-" (stdin). Anything else is an error
// in words, reported as a usage error.
func ReadFacts(path string, stdin io.Reader) ([]protocol.Fact, error) {
	var raw []byte
	var err error
	name := path
	if path == "-" {
		raw, err = io.ReadAll(stdin)
		name = "standard input"
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("--facts: cannot read %s: %v", path, pe.Err)
		}
		return nil, fmt.Errorf("--facts: %v", err)
	}
	trimmed := bytes.TrimSpace(raw)
	want := `want a JSON array of facts, e.g. [{"pred":"current_url","args":["https://..."]}], or {"facts": [...]}`
	switch {
	case len(trimmed) == 0:
		return nil, fmt.Errorf("--facts: %s is empty: %s", name, want)
	case trimmed[0] == '[':
		var facts []protocol.Fact
		if err := json.Unmarshal(trimmed, &facts); err != nil {
			return nil, fmt.Errorf("--facts: %s is not a JSON array of facts (%s): %s", name, jsonProblem(err), want)
		}
		return facts, nil
	case trimmed[0] == '{':
		var wrapped struct {
			Facts *[]protocol.Fact `json:"facts"`
		}
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&wrapped); err != nil || wrapped.Facts == nil {
			return nil, fmt.Errorf("--facts: %s is an object without a \"facts\" array: %s", name, want)
		}
		return *wrapped.Facts, nil
	}
	return nil, fmt.Errorf("--facts: %s is not JSON: %s", name, want)
}

// jsonProblem says briefly what is wrong with a JSON document.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("%s where %s belongs, at byte %d", te.Value, te.Type, te.Offset)
	}
	return "invalid"
}
