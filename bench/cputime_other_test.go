//go:build !unix

package bench

import "time"

// cpuTime is not measured here; benchmarks skip their CPU metrics when it is 0.
func cpuTime() time.Duration { return 0 }
