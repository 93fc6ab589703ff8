package code

import "time"

// SetPatienceClock replaces the clock of the requests' patience (how long
// a request waits for a starting or busy language server): each wait
// calls after, and ends when its channel receives.
func SetPatienceClock(c *Code, after func(time.Duration) <-chan time.Time) {
	c.after = after
}

// ServerState is the pool's state of lang's server of the first root and
// how many times it was started.
func ServerState(c *Code, lang string) (string, int) {
	return c.pool.State(poolKey(c.roots[0], lang))
}
