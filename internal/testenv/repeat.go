package testenv

import "sync"

// Repeat calls fn over and over in n goroutines, with the goroutine's
// number (0 to n-1) and the call's count in it (from 0), until the
// returned stop is called; stop waits for the goroutines to end (a call
// under way finishes first) and may be called more than once.
func Repeat(n int, fn func(worker, i int)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				fn(w, i)
			}
		}()
	}
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}
