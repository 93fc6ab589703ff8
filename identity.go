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

// CallerPermitted reports whether the caller of the request ctx belongs
// to holds permission, or "*" (every permission; an anonymous caller holds
// the server's AnonymousPermissions, "*" by default). Policy rules see the
// same permissions as caller_permission facts; an action checks with it
// what it must not do for a caller without the permission whatever the
// rules say.
func CallerPermitted(ctx context.Context, permission string) bool {
	for _, p := range callerFrom(ctx).permissions {
		if p == "*" || p == permission {
			return true
		}
	}
	return false
}
