package workspace

import "time"

// SetClock makes now the clock w issues and checks edit ids by.
func SetClock(w *Workspace, now func() time.Time) { w.now = now }
