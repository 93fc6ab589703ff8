package client

import (
	"math/rand/v2"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// retryable reports whether a request answered with code may be sent again
// unchanged (Spec 09 sections 7.1 and 7.3). Other recoverable codes, such
// as invalid_facts or schema_validation_failed, need a changed request,
// and retrying them as they are would only fail again.
func retryable(code protocol.Code) bool {
	return code == protocol.CodeServerNotReady || code == protocol.CodeRateLimited
}

// retryDelay is the wait before attempt+1: exponential backoff
// (base·2^(attempt-1), at most ceiling), never less than the server's
// retryAfter, plus jitter(d) on top.
func retryDelay(attempt int, retryAfter, base, ceiling time.Duration, jitter func(time.Duration) time.Duration) time.Duration {
	d := base
	for i := 1; i < attempt && d < ceiling; i++ {
		d *= 2
	}
	d = max(min(d, ceiling), retryAfter)
	return d + jitter(d)
}

// jitter is a random extra wait of up to a quarter of d, so that clients
// refused together do not come back together.
func jitter(d time.Duration) time.Duration {
	if q := int64(d / 4); q > 0 {
		return time.Duration(rand.Int64N(q + 1))
	}
	return 0
}
