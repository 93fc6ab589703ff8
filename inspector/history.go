package inspector

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// entry is one request of the session history.
type entry struct {
	ID   int       `json:"id"`
	Time time.Time `json:"time"`
	// Kind is "evaluate", "invoke" or "manifest".
	Kind    string `json:"kind"`
	Summary string `json:"summary"`
	OK      bool   `json:"ok"`
	// Code is the error code of a failed request.
	Code       protocol.Code `json:"code,omitempty"`
	Status     int           `json:"status,omitempty"`
	DurationMS int64         `json:"duration_ms"`
	// Intent is an evaluate call's request as sent.
	Intent *protocol.IntentRequest `json:"intent,omitempty"`
	// EvalTimeUsed is the evaluation time the server reported; a replay
	// pins it so that the macro_ids come out the same.
	EvalTimeUsed *protocol.Time `json:"eval_time_used,omitempty"`
	// Invoke is an invoke call's request as sent, without its
	// confirmation token.
	Invoke *protocol.InvokeRequest `json:"invoke,omitempty"`
	// Confirmed: the invocation carried a confirmation token.
	Confirmed bool `json:"confirmed,omitempty"`

	size int
}

func (e *entry) fail(v *ErrorView) {
	e.OK = false
	e.Code = v.Error.Code
	e.Status = v.Status
}

// history keeps the session's requests, oldest first, bounded in count
// and in bytes.
type history struct {
	mu       sync.Mutex
	max      int
	maxBytes int
	bytes    int
	nextID   int
	entries  []*entry
}

// maxHistoryBytes bounds the memory of the remembered requests.
const maxHistoryBytes = 32 << 20

func newHistory(max int) *history { return &history{max: max, maxBytes: maxHistoryBytes} }

// add records e at now and returns its id.
func (h *history) add(e *entry, now time.Time) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextID++
	e.ID, e.Time = h.nextID, now.UTC()
	if raw, err := json.Marshal(e); err == nil {
		e.size = len(raw)
	}
	h.entries = append(h.entries, e)
	h.bytes += e.size
	for len(h.entries) > 1 && (len(h.entries) > h.max || h.bytes > h.maxBytes) {
		h.bytes -= h.entries[0].size
		h.entries[0] = nil
		h.entries = h.entries[1:]
	}
	return e.ID
}

// list returns the entries, oldest first. The entries are shared: callers
// must not modify them.
func (h *history) list() []*entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*entry{}, h.entries...)
}
