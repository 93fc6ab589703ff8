package protocol

import "fmt"

// MaxIDBytes is the longest id a peer may send, in bytes of its UTF-8
// text: an envelope's "id" and a cancel's "request_id". Ids are echoed in
// every answer, logged with every request and kept as keys while a
// request runs, so they are bounded when the message is decoded; 256
// bytes holds any UUID, ULID or counter with room for a prefix.
const MaxIDBytes = 256

// CheckID returns malformed_message naming field (the wire name: "id",
// "request_id") when id is longer than [MaxIDBytes], else nil. The error
// echoes none of the id.
func CheckID(field, id string) *Error {
	if len(id) <= MaxIDBytes {
		return nil
	}
	return idTooLong(field, len(id))
}

func idTooLong(field string, n int) *Error {
	return Errorf(CodeMalformedMessage, "field %q has %s; an id may have at most %d bytes", field, sizeText(n), MaxIDBytes).
		WithDetails(&ErrorDetails{Field: field})
}

// sizeText is n bytes in words.
func sizeText(n int) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

// LogID is id as a log line may carry it: as it is up to [MaxIDBytes],
// else its first bytes and its length (an id over the bound is refused,
// but its answer still echoes it; the log never holds it whole).
func LogID(id string) string {
	if len(id) <= MaxIDBytes {
		return id
	}
	return fmt.Sprintf("%s (%s)", ClipN(id, 32), sizeText(len(id)))
}
