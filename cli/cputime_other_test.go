//go:build !unix

package cli

import "time"

// cpuTime is not measured here.
func cpuTime() time.Duration { return 0 }
