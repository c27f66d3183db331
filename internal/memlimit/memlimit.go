// Package memlimit gives the Go runtime a soft memory limit derived from the
// container's memory limit, so that the garbage collector works harder as the
// heap nears what the container may use instead of letting it grow to twice
// the live data (GOGC=100) and the process be killed. BENCHMARKS.md
// ("Memory of a sync") measures what this costs and saves.
package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Fraction is the share of the container's memory limit given to the Go
// runtime as its soft limit. The rest is for what the runtime does not count
// (the binary's own pages, mostly) and for headroom: a soft limit below the
// live data makes the collector run nearly without pause rather than fail.
const Fraction = 0.6

// Soft is the soft limit for a container limited to limit bytes.
func Soft(limit int64) int64 { return int64(float64(limit) * Fraction) }

// cgroupFiles are where Linux tells a process its memory limit: cgroup v2,
// then v1, relative to the file system root.
var cgroupFiles = []string{"sys/fs/cgroup/memory.max", "sys/fs/cgroup/memory/memory.limit_in_bytes"}

// unlimitedV1 is the value above which cgroup v1 means "no limit" (it
// reports the largest page-aligned int64).
const unlimitedV1 = 1 << 62

// ContainerLimit reads the memory limit of the cgroup the process runs in,
// below root ("/" in production); false when there is none.
func ContainerLimit(root string) (int64, bool) {
	for _, f := range cgroupFiles {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || n >= unlimitedV1 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// Set gives the runtime the soft limit Soft(container limit) unless
// GOMEMLIMIT is set (the runtime applies that itself) or there is no
// container limit. It returns the limit it set, 0 when it set none.
func Set(getenv func(string) string, root string) int64 {
	if getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit, ok := ContainerLimit(root)
	if !ok {
		return 0
	}
	soft := Soft(limit)
	debug.SetMemoryLimit(soft)
	return soft
}

// GCPercent is the collector's target (GOGC) while a soft memory limit is in
// force: with the limit bounding the heap, letting it grow to two and a half
// times the live data rather than two means fewer collections in a short
// run. At 10,000 tenants a no-op used about 0.1 CPU-s less (of 1.6) for about
// 10 MiB more peak RSS; 200 saved no more and cost 30 MiB (BENCHMARKS.md,
// "A no-op sync as a CronJob starts it").
const GCPercent = 150

// TuneGC sets the collector's target to GCPercent when a soft memory limit
// is in force (GOMEMLIMIT, or Set found a container limit) and GOGC is not
// set; it returns the target it set, 0 when it left it alone. Without a
// limit nothing would stop the heap growing further, so the
// default stays.
func TuneGC(getenv func(string) string) int {
	if getenv("GOGC") != "" || debug.SetMemoryLimit(-1) == math.MaxInt64 {
		return 0
	}
	debug.SetGCPercent(GCPercent)
	return GCPercent
}
