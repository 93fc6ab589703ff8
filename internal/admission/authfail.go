package admission

import (
	"context"
	"time"

	"github.com/manglecp/manglecp/internal/ratelimit"
)

// Failed authentications are limited per client and server-wide (issue 26
// items 4 and 5).
//
// The credential is always verified first, in constant time, and a
// correct one is always accepted: only failures are counted, and only a
// failure is ever refused with rate_limited. So a caller with a correct
// credential is never refused because of anyone's failures, its own
// included: not behind a proxy every caller shares, not behind a NAT or an
// IPv6 /64 shared with an attacker, not while an attacker rotating
// addresses has spent the global budget.
//
// What this gives up, and why it is safe: a limit that refused before
// verifying would also withhold the verdict on a correct guess, so it
// would slow down guessing; this one answers a correct guess whatever the
// limits. It leaks nothing about credentials beyond what any login does
// (right or wrong: a rate_limited answer only ever follows a wrong
// credential, as auth_invalid does), and the verification does not depend
// on the limits, so its timing says nothing about them or about how close
// a guess was. (A wrong credential answered rate_limited while its own
// client's budget is left does tell that the server-wide budget is spent,
// i.e. that others are failing; nothing more.) Guessing is kept out by the
// credentials themselves: static tokens are compared as SHA-256 digests in
// constant time against every identity and must be long random strings
// (the CLI refuses fewer than 16 characters; docs/deploy.md says to use
// 32 random bytes), and JWTs are signed. What the limits do is tell
// failing clients, one or all together, to back off (rate_limited with
// retry_after_ms), in bounded memory: the per-client table holds at most
// authFailClients keys.
const (
	// authFailBurst failures at once per client, then one per
	// 1/authFailPerSecond seconds.
	authFailBurst     = 10
	authFailPerSecond = 1.0
	// authFailGlobalBurst failures at once over all clients, then
	// authFailGlobalPerSecond: of 1,000 wrong guesses from 100 addresses
	// (10 each, within each one's budget) 900 are answered rate_limited.
	authFailGlobalBurst     = 100
	authFailGlobalPerSecond = 10.0
	// authFailClients bounds the clients whose failures are remembered
	// (about 11 MB when full of IPv6 /64 keys). A client's entry goes once
	// its budget is full again (at most authFailBurst/authFailPerSecond =
	// 10 s after its last failure); when the table is full of clients
	// still failing, a new client's failure is answered rate_limited,
	// never by forgetting another client's failures.
	authFailClients = 100_000
)

// AuthFailures counts failed authentications per client (IPv4 address,
// IPv6 /64, or a transport's peer name) and over the whole server. It is
// safe for concurrent use; its clock is the wall clock (abuse limits do
// not follow the server's protocol clock).
//
// With a shared store ([AuthFailures.Share], the replicas' Redis), the
// budgets are the deployment's, not each replica's: N replicas give an
// attacker one budget, not N. The buckets then live in the store (on its
// clock); when it cannot be reached, each replica's own budgets decide, so
// failures are never unlimited.
type AuthFailures struct {
	perClient      *ratelimit.Buckets
	global         ratelimit.Bucket
	perClientLimit ratelimit.Limit
	globalLimit    ratelimit.Limit
	now            func() time.Time
	shared         Taker
}

// Taker takes one from the token bucket of key in a shared store
// (store.Store's Take, refilled at perSecond up to burst): 0, or how long
// until it could.
type Taker func(ctx context.Context, key string, perSecond float64, burst int, now time.Time) (time.Duration, error)

// NewAuthFailures returns the budgets above, on the wall clock.
func NewAuthFailures() *AuthFailures {
	return &AuthFailures{
		perClient:      ratelimit.New(authFailClients, ratelimit.Refuse),
		perClientLimit: ratelimit.Limit{PerSecond: authFailPerSecond, Burst: authFailBurst},
		globalLimit:    ratelimit.Limit{PerSecond: authFailGlobalPerSecond, Burst: authFailGlobalBurst},
		now:            time.Now,
	}
}

// Share keeps the budgets in t, shared by every replica that uses it.
// Call it before use.
func (a *AuthFailures) Share(t Taker) { a.shared = t }

// Keys of the shared budgets in the store.
const (
	sharedClientKey = "authfail:client:"
	sharedGlobalKey = "authfail:all"
)

// Failed counts a failed authentication from peer. It returns 0 when the
// failure is answered as such, or how long the client must wait when it,
// or every client together, is over its budget (rate_limited).
func (a *AuthFailures) Failed(ctx context.Context, peer string) time.Duration {
	now := a.now()
	key := ratelimit.ClientKey(peer)
	if a.shared != nil {
		wait, err := a.shared(ctx, sharedClientKey+key, a.perClientLimit.PerSecond, a.perClientLimit.Burst, now)
		if err == nil && wait > 0 {
			return wait
		}
		if err == nil {
			if wait, err = a.shared(ctx, sharedGlobalKey, a.globalLimit.PerSecond, a.globalLimit.Burst, now); err == nil {
				return wait
			}
		}
		// The store failed: this replica's own budgets decide.
	}
	if wait := a.perClient.Take(key, a.perClientLimit, now); wait > 0 {
		return wait // a client over its own budget does not spend everyone's
	}
	return a.global.Take(a.globalLimit, now)
}

// SetGlobalLimit replaces the server-wide budget (PerSecond <= 0: none),
// so a test can watch the per-client budget alone. Call it before use.
func (a *AuthFailures) SetGlobalLimit(l ratelimit.Limit) { a.globalLimit = l }

// SetClock replaces the wall clock of the budgets, for tests. Call it
// before use.
func (a *AuthFailures) SetClock(now func() time.Time) { a.now = now }
