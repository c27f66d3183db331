package gitsync

import (
	"bytes"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/render"
)

const (
	resA = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"
	resB = "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"
	resC = "0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c"
	resD = "0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d"
	ordA = "1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a"
	ordC = "1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c"
)

func TestMessage(t *testing.T) {
	tenant := func(subject string, a changeset.Action, res string, orders ...string) changeset.Entry {
		return changeset.Entry{Stage: "render", Kind: "Tenant", Subject: subject, Action: a, Resource: res, Orders: orders}
	}
	for _, tc := range []struct {
		name    string
		entries []changeset.Entry
		want    string
	}{
		{"added, updated, removed, unchanged and skipped", []changeset.Entry{
			tenant("o/cluster/a", changeset.Create, resA, ordA),
			tenant("o/cluster/b", changeset.Update, resB),
			tenant("o/cluster/c", changeset.Delete, resC, ordC),
			tenant("o/cluster/d", changeset.Delete, resD),
			tenant("o/cluster/e", changeset.Unchanged, "0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e"),
			{Stage: "render", Kind: "Resource", Subject: "o/broken", Action: changeset.Skip, Reason: "name too\nlong"},
		}, `waldur: +1 ~1 -2 tenants

Added (1):
  o/cluster/a

Updated (1):
  o/cluster/b

Removed (2):
  o/cluster/c
  o/cluster/d (no Terminate order)

Not rendered, kept as they were (1):
  o/broken: name too long

Waldur-Resource: 0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a
Waldur-Resource: 0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b
Waldur-Resource: 0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c
Waldur-Resource: 0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d
Waldur-Order: 1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a
Waldur-Order: 1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c
`},
		{"only shared files", []changeset.Entry{tenant("o/cluster/e", changeset.Unchanged, resA)}, "waldur: update generated files\n"},
		{"one tenant in two targets", []changeset.Entry{
			tenant("r/downstream/a", changeset.Create, resA, ordA),
			tenant("r/management/a", changeset.Create, resA, ordA),
		}, `waldur: +2 tenants

Added (2):
  r/downstream/a
  r/management/a

Waldur-Resource: 0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a
Waldur-Order: 1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Message(changeset.Set{Entries: tc.entries}); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// git itself reads the trailers of a commit made with the message.
func TestTrailersParseWithGit(t *testing.T) {
	msg := Message(changeset.Set{Entries: []changeset.Entry{
		{Stage: "render", Kind: "Tenant", Subject: "o/cluster/a", Action: changeset.Create, Resource: resA, Orders: []string{ordA}},
		{Stage: "render", Kind: "Tenant", Subject: "o/cluster/b", Action: changeset.Update, Resource: resB},
	}})
	dir := t.TempDir() + "/r.git"
	gittest.InitBare(t, dir, "main")
	r := open(t, dir, "waldur", nil)
	res, err := Sync(t.Context(), r, planOf(tenantTree("v1", "o/cluster/a"), msg), 0)
	if err != nil {
		t.Fatal(err)
	}
	got := gittest.Git(t, dir, "log", "-1", "--format=%(trailers:only,unfold)", res.Commit)
	want := "Waldur-Resource: " + resA + "\nWaldur-Resource: " + resB + "\nWaldur-Order: " + ordA + "\n"
	if strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Errorf("git reads the trailers as:\n%s\nwant:\n%s", got, want)
	}
	if subject := gittest.Git(t, dir, "log", "-1", "--format=%s%n%an <%ae>%n%cn <%ce>", res.Commit); subject != "waldur: +1 ~1 tenants\nwaldur-gitops <bot@example.org>\nwaldur-gitops <bot@example.org>\n" {
		t.Errorf("subject and identities: %q", subject)
	}
}

func TestWriteDiff(t *testing.T) {
	prev := render.Tree{
		".waldur-gitops":          []byte("m\n"),
		"o/cluster/a/ns.yaml":     []byte("kind: Namespace\nmetadata:\n  name: a\n"),
		"o/cluster/gone/ns.yaml":  []byte("kind: Namespace\n"),
		"o/cluster/s/secret.yaml": []byte("apiVersion: v1\nkind: Secret\ndata:\n  password: aHVudGVyMg==\n"),
	}
	next := render.Tree{
		".waldur-gitops":          []byte("m\n"),
		"o/cluster/a/ns.yaml":     []byte("kind: Namespace\nmetadata:\n  name: a2\n"),
		"o/cluster/new/ns.yaml":   []byte("kind: Namespace\n"),
		"o/cluster/s/secret.yaml": []byte("apiVersion: v1\nkind: Secret\ndata:\n  password: c2VjcmV0Mw==\n"),
	}
	if got := ChangedFiles(prev, next); strings.Join(got, " ") != "o/cluster/a/ns.yaml o/cluster/gone/ns.yaml o/cluster/new/ns.yaml o/cluster/s/secret.yaml" {
		t.Errorf("changed files %v", got)
	}
	var b bytes.Buffer
	if err := WriteDiff(&b, "waldur", prev, next, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"diff --git a/waldur/o/cluster/a/ns.yaml b/waldur/o/cluster/a/ns.yaml\n",
		"-  name: a\n+  name: a2\n",
		"deleted file mode 100644\n",
		"new file mode 100644\n",
		"+++ b/waldur/o/cluster/new/ns.yaml\n",
		"(the contents of a Secret are not shown; blob ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{"aHVudGVyMg", "c2VjcmV0Mw", ".waldur-gitops"} {
		if strings.Contains(out, secret) {
			t.Errorf("diff shows %q:\n%s", secret, out)
		}
	}
	b.Reset()
	if err := WriteDiff(&b, "waldur", prev, next, true); err != nil || !strings.Contains(b.String(), "\x1b[") {
		t.Errorf("no colours: %v", err)
	}
	b.Reset()
	if err := WriteDiff(&b, "waldur", prev, prev, true); err != nil || b.Len() != 0 {
		t.Errorf("diff of equal trees: %q %v", b.String(), err)
	}
}
