package manglecp

import "context"

// CallerIdentity returns who makes the request ctx belongs to, as an action
// sees it: the authenticated identity's name, or anonymous true (and the
// name "anonymous") when authentication is off or the caller presented no
// credential the server requires. A domain uses it to bind what it issues
// (e.g. a signed edit id) to the identity that may redeem it.
func CallerIdentity(ctx context.Context) (name string, anonymous bool) {
	c := callerFrom(ctx)
	return c.name, c.anonymous
}
