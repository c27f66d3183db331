package gitsync

import (
	"fmt"
	"maps"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/waldur/waldur-gitops/render"
)

// TestBlobsAreShared: a blob is held once. The files a commit is made from
// are stored as they are, and the tree read back after a fetch shares the
// bytes the store holds; both still hash and push as Git expects (the
// server checks the pack).
func TestBlobsAreShared(t *testing.T) {
	ctx := t.Context()
	srv, url, _ := httpRepo(t)
	var tenants []string
	for i := range 40 {
		tenants = append(tenants, fmt.Sprintf("o/cluster/t%02d", i))
	}
	first := tenantTree("a fairly long object body that the server can store as a delta of its neighbour\n", tenants...)
	r := open(t, url, "waldur", auth(srv))
	if _, err := Sync(ctx, r, planOf(first, "first\n"), 0); err != nil {
		t.Fatal(err)
	}

	// The blobs of a commit are the rendered slices themselves.
	next := maps.Clone(first)
	next["o/cluster/t07/namespace.yaml"] = []byte("changed\n")
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(ctx, next, "one\n"); err != nil {
		t.Fatal(err)
	}
	h := plumbing.ComputeHash(plumbing.BlobObject, next["o/cluster/t07/namespace.yaml"])
	obj, err := r.store.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := obj.(*blob); !ok || &b.data[0] != &next["o/cluster/t07/namespace.yaml"][0] {
		t.Fatalf("the committed blob %T is a copy of the rendered file", obj)
	}
	if err := r.Push(ctx); err != nil {
		t.Fatal(err)
	}

	// A fresh fetch: every file of the tree is the store's blob, not a copy.
	r = open(t, url, "waldur", auth(srv))
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	cur, err := r.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sameFiles(t, filesOf(cur), next)
	for p, data := range cur {
		obj, err := r.store.EncodedObject(plumbing.BlobObject, r.curBlobs[p])
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		b, ok := obj.(*blob)
		if !ok {
			t.Fatalf("%s is stored as a %T", p, obj)
		}
		if len(data) > 0 && &b.data[0] != &data[0] {
			t.Fatalf("%s is a copy of the stored blob", p)
		}
		if cap(b.data) != len(b.data) {
			t.Fatalf("%s: the stored blob has len %d, cap %d", p, len(b.data), cap(b.data))
		}
		if got := plumbing.ComputeHash(plumbing.BlobObject, data); got != r.curBlobs[p] {
			t.Fatalf("%s hashes to %s, the tree says %s", p, got, r.curBlobs[p])
		}
	}
}

func filesOf(t render.Tree) map[string]string {
	out := map[string]string{}
	for p, d := range t {
		out[p] = string(d)
	}
	return out
}
