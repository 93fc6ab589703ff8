package manglecp

import (
	"time"

	"github.com/manglecp/manglecp/internal/ratelimit"
)

// SetAuthFailGlobalLimit replaces the server-wide budget of failed
// authentications (perSecond <= 0: none), so a test can watch the
// per-client budget alone.
func SetAuthFailGlobalLimit(s *Server, perSecond float64, burst int) {
	s.authFails.SetGlobalLimit(ratelimit.Limit{PerSecond: perSecond, Burst: burst})
}

// SetAuthFailClock replaces the wall clock of the failed-authentication
// budgets.
func SetAuthFailClock(s *Server, now func() time.Time) { s.authFails.SetClock(now) }
