// Package parallel runs independent pieces of work on a bounded number of
// goroutines.
package parallel

import "sync"

// For runs fn(0), …, fn(n-1) on at most workers goroutines (at least one) and
// returns when every call has returned.
func For(n, workers int, fn func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, min(workers, n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}
