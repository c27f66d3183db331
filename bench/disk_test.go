//go:build linux

package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/localtree"
)

// outDir is a directory the to-disk benchmarks write below, named by its
// file system type.
type outDir struct {
	fs, root string
}

// ext4Quiet is how long the to-disk benchmarks let an ext4 file system rest
// after deleting a tree before they time writing one. Without a journal, ext4
// does not reuse an inode freed in the last 30 s (35 s while its inode table
// block is dirty), and every inode allocation walks past those: creating 30,000
// inodes right after deleting 30,000 costs seconds of system CPU that a
// periodic run spaced further apart never pays. On this project's dev VM it
// turned a 2–3 s tree write into 10–15 s.
const ext4Quiet = 36 * time.Second

// scratch holds the output roots of the to-disk benchmarks, shared by all of
// them and removed by TestMain at the end, so that no benchmark's clean-up
// lands in the next one's timed loop.
var scratch struct {
	mu      sync.Mutex
	dirs    []outDir
	made    bool
	deleted map[string]time.Time // fs → last bulk delete
}

// outDirs returns a directory on tmpfs (/dev/shm) and one under $TMPDIR (on
// this project's CI and dev machines, the root disk), skipping the second when
// it is on the same file system type. Writing 20,000 small files costs
// metadata operations that differ by orders of magnitude between file systems,
// so every to-disk result is reported per file system. Each call returns fresh
// subdirectories.
func outDirs(b *testing.B) []outDir {
	scratch.mu.Lock()
	defer scratch.mu.Unlock()
	if !scratch.made {
		scratch.made = true
		scratch.deleted = map[string]time.Time{}
		for _, parent := range []string{"/dev/shm", os.TempDir()} {
			if st, err := os.Stat(parent); err != nil || !st.IsDir() {
				continue
			}
			d, err := os.MkdirTemp(parent, "waldur-gitops-bench-")
			if err != nil {
				continue
			}
			od := outDir{fsName(d), d}
			if len(scratch.dirs) > 0 && scratch.dirs[0].fs == od.fs {
				os.Remove(d)
				continue
			}
			scratch.dirs = append(scratch.dirs, od)
		}
	}
	var out []outDir
	for _, od := range scratch.dirs {
		d, err := os.MkdirTemp(od.root, "b")
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, outDir{od.fs, d})
	}
	if len(out) == 0 {
		b.Skip("no scratch directory")
	}
	return out
}

// removeScratch deletes every output of the to-disk benchmarks.
func removeScratch() {
	scratch.mu.Lock()
	defer scratch.mu.Unlock()
	for _, od := range scratch.dirs {
		os.RemoveAll(od.root)
	}
	scratch.dirs = nil
}

// deletedTree records that a tree was just deleted on file system fs.
func deletedTree(fs string) {
	scratch.mu.Lock()
	defer scratch.mu.Unlock()
	scratch.deleted[fs] = time.Now()
}

// settle flushes dirty pages, so that write-back from before does not run in
// the timed loop, and on ext4 waits out ext4Quiet since the last deletion.
func settle(fs string) {
	syscall.Sync()
	if fs != "ext4" {
		return
	}
	scratch.mu.Lock()
	last := scratch.deleted[fs]
	scratch.mu.Unlock()
	if wait := time.Until(last.Add(ext4Quiet)); wait > 0 {
		time.Sleep(wait)
	}
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
			settle(od.fs)
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
				settle(od.fs) // the tree stays until TestMain ends: no deletes here
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
// compared with the new render (nothing changed) and replaced. Runs on ext4 are
// spaced by ext4Quiet, as periodic runs would be.
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
			settle(od.fs)
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
				deletedTree(od.fs) // Write removed the previous tree
				settle(od.fs)
				b.StartTimer()
			}
			ph.report(b)
			b.ReportMetric(float64(n)/(b.Elapsed().Seconds()/float64(b.N)), "tenants/s")
		})
	}
}
