package macroid

import "github.com/manglecp/manglecp/protocol"

// appendJSON appends v as json.Marshal encodes it (protocol.AppendJSON,
// which writes the values macro-tool ids hash without reflection).
// TestAppendJSONMatchesMarshal and FuzzAppendJSON hold it to
// json.Marshal's bytes, so ids do not change. It reports false where
// json.Marshal fails.
func appendJSON(buf []byte, v any) ([]byte, bool) {
	out, err := protocol.AppendJSON(buf, v)
	return out, err == nil
}
