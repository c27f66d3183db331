//go:build linux

package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/internal/synth"
	"github.com/waldur/waldur-gitops/localtree"
)

// outDir is a directory the to-disk benchmarks write below, named by its
// file system type.
type outDir struct {
	fs, root string
}

// outDirs returns a directory on tmpfs (/dev/shm) and one under $TMPDIR (on
// this project's CI and dev machines, the root disk), skipping the second when
// it is on the same file system type. Writing 20,000 small files costs
// metadata operations that differ by orders of magnitude between file systems,
// so every to-disk result is reported per file system.
func outDirs(b *testing.B) []outDir {
	var out []outDir
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "waldur-gitops-bench-"); err == nil {
			b.Cleanup(func() { os.RemoveAll(d) })
			out = append(out, outDir{fsName(d), d})
		}
	}
	d := b.TempDir()
	if len(out) == 0 || fsName(d) != out[0].fs {
		out = append(out, outDir{fsName(d), d})
	}
	return out
}

// fsName names the file system type of dir.
func fsName(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "unknown"
	}
	switch uint64(st.Type) {
	case 0xEF53:
		return "ext4"
	case 0x01021994:
		return "tmpfs"
	case 0x58465342:
		return "xfs"
	case 0x9123683E:
		return "btrfs"
	case 0x794C7630:
		return "overlayfs"
	}
	return fmt.Sprintf("fs-%x", uint64(st.Type))
}

// settle flushes dirty pages so that one benchmark's write-back does not run
// during the next one's timed loop.
func settle() { syscall.Sync() }

// BenchmarkRenderToDisk measures what `render --out DIR` does into an empty
// directory, minus reading the snapshot: Render, Tree and localtree.Write. It
// reports each phase and the share of the total that rendering takes.
func BenchmarkRenderToDisk(b *testing.B) {
	const n = 10000
	f := newFixture(b, synth.Options{Tenants: n})
	for _, od := range outDirs(b) {
		b.Run(strconv.Itoa(n)+"/"+od.fs, func(b *testing.B) {
			r := f.renderer()
			var ph phases
			var files, size int
			i := 0
			settle()
			b.ReportAllocs()
			for b.Loop() {
				out := filepath.Join(od.root, "out"+strconv.Itoa(i))
				i++
				t := ph.start()
				res, err := r.Render(f.state)
				if err != nil {
					b.Fatal(err)
				}
				t = ph.lap("render", t)
				tree := res.Tree(nil)
				t = ph.lap("tree", t)
				if err := localtree.Write(out, tree); err != nil {
					b.Fatal(err)
				}
				ph.lap("write", t)

				b.StopTimer()
				f.check(b, res)
				files, size = len(tree), 0
				for _, d := range tree {
					size += len(d)
				}
				if err := os.RemoveAll(out); err != nil {
					b.Fatal(err)
				}
				settle()
				b.StartTimer()
			}
			ph.report(b)
			b.ReportMetric(float64(n)/(b.Elapsed().Seconds()/float64(b.N)), "tenants/s")
			b.ReportMetric(float64(files), "files")
			b.ReportMetric(mib(uint64(size)), "tree-MiB")
		})
	}
}

// BenchmarkRerenderToDisk measures the steady state of a periodic `render --out
// DIR`: the directory holds the previous run's tree, which is read back,
// compared with the new render (nothing changed) and replaced.
func BenchmarkRerenderToDisk(b *testing.B) {
	const n = 10000
	f := newFixture(b, synth.Options{Tenants: n})
	for _, od := range outDirs(b) {
		b.Run(strconv.Itoa(n)+"/"+od.fs, func(b *testing.B) {
			r := f.renderer()
			out := filepath.Join(od.root, "out")
			res, err := r.Render(f.state)
			if err != nil {
				b.Fatal(err)
			}
			if err := localtree.Write(out, res.Tree(nil)); err != nil {
				b.Fatal(err)
			}
			res = nil
			var ph phases
			settle()
			b.ReportAllocs()
			for b.Loop() {
				t := ph.start()
				prev, err := localtree.Read(out)
				if err != nil {
					b.Fatal(err)
				}
				t = ph.lap("read", t)
				res, err := r.Render(f.state)
				if err != nil {
					b.Fatal(err)
				}
				t = ph.lap("render", t)
				tree := res.Tree(prev)
				t = ph.lap("tree", t)
				cs := res.Compare(prev, tree)
				t = ph.lap("compare", t)
				if err := localtree.Write(out, tree); err != nil {
					b.Fatal(err)
				}
				ph.lap("write", t)

				b.StopTimer()
				if c := cs.Counts(); c[changeset.Unchanged] != len(cs.Entries) {
					b.Fatalf("a re-render of the same state changed tenants: %v", c)
				}
				settle()
				b.StartTimer()
			}
			ph.report(b)
			b.ReportMetric(float64(n)/(b.Elapsed().Seconds()/float64(b.N)), "tenants/s")
		})
	}
}
