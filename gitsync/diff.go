package gitsync

import (
	"bytes"
	"io"
	"path"
	"regexp"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/waldur/waldur-gitops/render"
)

// ChangedFiles lists the paths whose contents differ between prev and next,
// sorted.
func ChangedFiles(prev, next render.Tree) []string {
	var out []string
	for p, b := range next {
		if old, ok := prev[p]; !ok || !bytes.Equal(old, b) {
			out = append(out, p)
		}
	}
	for p := range prev {
		if _, ok := next[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// WriteDiff writes the unified diff (git's format, three lines of context)
// that turns prev into next. Paths are shown below dir, the directory of the
// repository the trees belong to. With color it uses git's terminal colours.
// The contents of Kubernetes Secrets are never shown.
func WriteDiff(w io.Writer, dir string, prev, next render.Tree, color bool) error {
	var p patch
	for _, f := range ChangedFiles(prev, next) {
		fp := &filePatch{}
		name := path.Join(dir, f)
		old, hadOld := prev[f]
		cur, hasNew := next[f]
		if hadOld {
			fp.from = &file{path: name, hash: plumbing.ComputeHash(plumbing.BlobObject, old)}
		}
		if hasNew {
			fp.to = &file{path: name, hash: plumbing.ComputeHash(plumbing.BlobObject, cur)}
		}
		if bytes.IndexByte(old, 0) >= 0 || bytes.IndexByte(cur, 0) >= 0 {
			fp.binary = true
		} else {
			fp.chunks = chunks(shown(old), shown(cur))
		}
		p.files = append(p.files, fp)
	}
	if len(p.files) == 0 {
		return nil
	}
	enc := fdiff.NewUnifiedEncoder(w, fdiff.DefaultContextLines)
	if color {
		enc.SetColor(fdiff.NewColorConfig())
	}
	return enc.Encode(p)
}

// secretKind matches a manifest of kind Secret.
var secretKind = regexp.MustCompile(`(?m)^kind:\s*["']?Secret["']?\s*$`)

// shown is the text of a file as the diff shows it.
func shown(b []byte) string {
	if secretKind.Match(b) {
		return "# (the contents of a Secret are not shown; blob " + plumbing.ComputeHash(plumbing.BlobObject, b).String()[:12] + ")\n"
	}
	return string(b)
}

func chunks(from, to string) []fdiff.Chunk {
	var out []fdiff.Chunk
	for _, d := range diff.Do(from, to) {
		op := fdiff.Equal
		switch d.Type {
		case diffmatchpatch.DiffInsert:
			op = fdiff.Add
		case diffmatchpatch.DiffDelete:
			op = fdiff.Delete
		}
		out = append(out, chunk{text: d.Text, op: op})
	}
	return out
}

type patch struct{ files []fdiff.FilePatch }

func (p patch) FilePatches() []fdiff.FilePatch { return p.files }
func (p patch) Message() string                { return "" }

type filePatch struct {
	from, to *file
	binary   bool
	chunks   []fdiff.Chunk
}

func (f *filePatch) IsBinary() bool { return f.binary }
func (f *filePatch) Files() (fdiff.File, fdiff.File) {
	// A nil *file must become a nil interface, which the encoder checks for.
	var from, to fdiff.File
	if f.from != nil {
		from = f.from
	}
	if f.to != nil {
		to = f.to
	}
	return from, to
}
func (f *filePatch) Chunks() []fdiff.Chunk { return f.chunks }

type file struct {
	path string
	hash plumbing.Hash
}

func (f *file) Hash() plumbing.Hash     { return f.hash }
func (f *file) Mode() filemode.FileMode { return filemode.Regular }
func (f *file) Path() string            { return f.path }

type chunk struct {
	text string
	op   fdiff.Operation
}

func (c chunk) Content() string       { return c.text }
func (c chunk) Type() fdiff.Operation { return c.op }
