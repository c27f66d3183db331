package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestSet(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1)) // restore
	for _, tc := range []struct {
		name     string
		files    map[string]string
		gomem    string
		wantSoft int64
	}{
		{"cgroup v2", map[string]string{"sys/fs/cgroup/memory.max": "419430400\n"}, "", 251658240},
		{"cgroup v2 unlimited", map[string]string{"sys/fs/cgroup/memory.max": "max\n"}, "", 0},
		{"cgroup v1", map[string]string{"sys/fs/cgroup/memory/memory.limit_in_bytes": "536870912\n"}, "", 322122547},
		{"cgroup v1 unlimited", map[string]string{"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, "", 0},
		{"no cgroup", nil, "", 0},
		{"garbage", map[string]string{"sys/fs/cgroup/memory.max": "lots\n"}, "", 0},
		{"GOMEMLIMIT wins", map[string]string{"sys/fs/cgroup/memory.max": "419430400\n"}, "300MiB", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for p, content := range tc.files {
				full := filepath.Join(root, p)
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			debug.SetMemoryLimit(math.MaxInt64)
			got := Set(func(k string) string {
				if k == "GOMEMLIMIT" {
					return tc.gomem
				}
				return ""
			}, root)
			if got != tc.wantSoft {
				t.Fatalf("Set = %d, want %d", got, tc.wantSoft)
			}
			want := tc.wantSoft
			if want == 0 {
				want = math.MaxInt64
			}
			if now := debug.SetMemoryLimit(-1); now != want {
				t.Fatalf("the runtime's limit is %d, want %d", now, want)
			}
		})
	}
}

func TestTuneGC(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct {
		name    string
		limit   int64
		gogc    string
		want    int
		percent int
	}{
		{"limit in force", 200 << 20, "", GCPercent, GCPercent},
		{"no limit", math.MaxInt64, "", 0, 100},
		{"GOGC wins", 200 << 20, "50", 0, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(tc.limit)
			debug.SetGCPercent(100)
			got := TuneGC(func(k string) string {
				if k == "GOGC" {
					return tc.gogc
				}
				return ""
			})
			if got != tc.want {
				t.Fatalf("TuneGC = %d, want %d", got, tc.want)
			}
			if now := debug.SetGCPercent(100); now != tc.percent {
				t.Fatalf("the collector's target is %d, want %d", now, tc.percent)
			}
		})
	}
}
