// Package parallel runs the parts of one request's work on several
// goroutines: a long fact list is decoded, validated and keyed in parts,
// so a large request's latency is not all on one core.
package parallel

import (
	"sync"
	"sync/atomic"
)

// Plan divides n items for at most procs goroutines that should each have
// at least perWorker of them: it returns how many goroutines (never fewer
// than 1) and how many parts, partsPerWorker per goroutine when there is
// more than one, so that one that starts late takes fewer (a single
// goroutine gets a single part).
func Plan(n, procs, perWorker, partsPerWorker int) (parts, workers int) {
	workers = max(1, min(procs, n/perWorker))
	if workers == 1 {
		return 1, 1
	}
	return workers * partsPerWorker, workers
}

// Run calls fn(i) for every i in [0, parts) on at most workers goroutines,
// the calling one among them, and returns when all calls have returned.
// The goroutines take the parts in order as they become free, so one that
// starts late takes fewer. A panic in a call is raised again on the
// caller once every goroutine has stopped, as if the calls had run there.
func Run(parts, workers int, fn func(i int)) {
	workers = min(workers, parts)
	if workers <= 1 {
		for i := range parts {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	panics := make([]any, workers)
	work := func(w int) {
		defer func() { panics[w] = recover() }()
		for {
			i := int(next.Add(1) - 1)
			if i >= parts {
				return
			}
			fn(i)
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { work(w) })
	}
	work(0)
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
}
