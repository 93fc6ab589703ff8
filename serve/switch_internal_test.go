package serve

import (
	"context"
	"testing"

	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// keeps is a handler that does not say it borrows a message's bytes.
type keeps struct{}

func (keeps) Handle(context.Context, *protocol.Inbound) *protocol.Envelope { return nil }
func (keeps) ManifestJSON() ([]byte, string)                               { return nil, "" }
func (keeps) MaxMessageBytes() int64                                       { return 1 }

type borrows struct{ keeps }

func (borrows) BorrowsData() bool { return true }

// TestSwitchBorrowsData: the switch answers for the handler it serves now,
// so the HTTP binding reuses bodies for the loaded server and never for a
// handler that may keep them.
func TestSwitchBorrowsData(t *testing.T) {
	var _ transport.DataBorrower = (*switchHandler)(nil)
	s := newSwitch(keeps{})
	if s.BorrowsData() {
		t.Error("a handler that does not say it borrows was reported as borrowing")
	}
	s.set(borrows{})
	if !s.BorrowsData() {
		t.Error("a borrowing handler was reported as keeping")
	}
}
