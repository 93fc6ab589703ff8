package mcpbridge

import "time"

// SetClock makes now the bridge's clock (validity windows of macro-tools,
// the confirmation ledger), for tests that move time without waiting.
func SetClock(b *Bridge, now func() time.Time) { b.now = now }
