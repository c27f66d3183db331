package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/review"
	"github.com/waldur/waldur-gitops/waldur"
)

// A run that starts afresh (a CronJob) holds nothing of the last run, so
// seeing that nothing changed used to cost fetching and reading the whole
// branch. The no-op record, a state ref of the repository
// (gitsync.ReadState), keeps the commit the last run pushed or found the
// branch at and a fingerprint of the files the owned directory holds there.
// When the branch is still at that commit and this run renders files with
// the same fingerprint, the owned directory already holds them: the run is
// a no-op, and the branch is not fetched. Anything else fetches as before.
// The record is only believed for the commit it names: whoever moves the
// branch (a person, another writer) makes it stale.

// noopRecord is the no-op record's content.
type noopRecord struct {
	// Commit is the branch tip the owned directory held Files at.
	Commit string `json:"commit"`
	// Files is treeFingerprint of those files.
	Files string `json:"files"`
	// Inputs is the render.Result.Inputs of the render the files are,
	// when they are exactly one render's.
	Inputs string `json:"inputs,omitempty"`
}

// noopCheck is what a run learnt before its render: where the branch is and
// what the record says; writer is set when the branch was fetched.
type noopCheck struct {
	done   chan struct{}
	tip    string
	record noopRecord
	writer gitsync.Writer
	// states holds what the look at the server read of the no-op record
	// (under noopName) and every state of alsoRead (nil when it failed).
	states map[string]gitsync.State
}

// readAlso makes a fresh run's look at the branch also read the state
// name, kept for Prefetched, so that a later stage needs no round trip of
// its own.
func (p *Git) readAlso(name string) {
	if !slices.Contains(p.alsoRead, name) {
		p.alsoRead = append(p.alsoRead, name)
	}
}

// prefetched is the state name as the current run's look at the branch read
// it; ok is false when the run did not read it (not a fresh run, not asked,
// or the read failed), and the caller reads it itself.
func (p *Git) prefetched(name string) (st gitsync.State, ok bool) {
	q := p.check
	if q == nil || !slices.Contains(p.alsoRead, name) {
		return gitsync.State{}, false
	}
	<-q.done
	if q.states == nil {
		return gitsync.State{}, false
	}
	return q.states[name], true
}

// noopName is the state ref holding the record of git.branch and git.path.
func (p *Git) noopName() string {
	h := sha256.Sum256([]byte(p.Config.Git.Branch + "\x00" + p.Config.Git.Path))
	return "sync-" + hex.EncodeToString(h[:8])
}

// noopEligible reports whether the config leaves nothing but the owned
// directory to publish: no Flux shards, shard branches, OCI artifacts or
// review branches, all of which are read from the fetched branch.
func (p *Git) noopEligible() bool {
	g := p.Config.Git
	return g.FluxShards <= 0 && !g.FluxShardBranches && g.FluxOCIRepository == "" && !review.Enabled(p.Config)
}

// startNoopCheck reads the branch tip and the record in the background,
// with the other states the run keeps in the repository (alsoRead), in one
// look at the server; unless the tip is the record's commit, it then
// fetches the branch there as the prefetch does.
func (p *Git) startNoopCheck(ctx context.Context) *noopCheck {
	q := &noopCheck{done: make(chan struct{})}
	go func() {
		defer close(q.done)
		tip, states, err := p.repo.ReadStates(ctx, append([]string{p.noopName()}, p.alsoRead...)...)
		if err != nil {
			logOrDiscard(p.Log).Warn("cannot read the branch tip and the no-op record; fetching the branch", "error", err.Error())
		} else {
			q.states, q.tip = states, tip
			if tip != "" && json.Unmarshal(states[p.noopName()].Data, &q.record) != nil {
				q.record = noopRecord{}
			}
		}
		if q.tip == "" || q.record.Commit != q.tip {
			var wait func()
			q.writer, wait = gitsync.Prefetch(ctx, p.repo)
			wait()
		}
	}()
	return q
}

// Holds reports whether the branch is at the commit the record names and
// that commit holds what inputs (render.Result.Inputs) render to: a render
// may then be hollow (render.Renderer.HollowWhen). It waits for the look at
// the server, which the render waits for anyway (Previous).
func (p *Git) Holds(inputs string) bool {
	q := p.check
	return q != nil && inputs != "" && q.atRecord() && q.record.Inputs == inputs
}

// atRecord waits for the look at the server and reports whether the
// branch, not fetched, is at the commit the record names.
func (q *noopCheck) atRecord() bool {
	<-q.done
	return q.writer == nil && q.tip != "" && q.record.Commit == q.tip
}

// recordable is the Inputs a record may keep for res: none unless res is
// the whole desired state.
func recordable(res *render.Result) string {
	if !res.Complete() {
		return ""
	}
	return res.Inputs
}

// quiet is the publish of a run whose render the branch already holds at
// the commit the record names; ok is false when the run must fetch.
func (p *Git) quiet(ctx context.Context, res *render.Result, o Options) (*Published, changeset.Result, bool) {
	q := p.check
	if q == nil || o.DryRun || len(res.Skipped) > 0 || len(res.Kept) > 0 || len(res.Unread) > 0 || len(res.Review) > 0 {
		return nil, changeset.Result{}, false
	}
	if !q.atRecord() {
		return nil, changeset.Result{}, false
	}
	branch := p.Config.Git.Branch
	pub := &Published{Where: p.repo.URL() + " " + branch + ":" + p.Config.Git.Path, Base: q.tip}
	if res.Hollow() {
		if !p.Holds(res.Inputs) {
			return nil, changeset.Result{}, false
		}
		pub.hollow, pub.present = res, map[waldur.UUID]bool{}
		for _, tn := range res.Tenants {
			pub.present[tn.Resource] = true
		}
	} else {
		next := res.Tree(nil) // noopEligible: no Flux layer to add
		if treeFingerprint(p.Config.Git.Path, next) != q.record.Files {
			return nil, changeset.Result{}, false
		}
		pub.Before, pub.After = next, next
		if in := recordable(res); in != "" {
			// The branch holds exactly this render: the next run with
			// the same inputs need not build its files.
			p.record(ctx, noopRecord{Commit: q.tip, Files: q.record.Files, Inputs: in})
		}
	}
	logOrDiscard(p.Log).Info("the branch is at the commit the last run left, which holds this render: nothing to fetch or push",
		"branch", branch, "commit", q.tip, "hollow", res.Hollow())
	tenants := res.Unchanged()
	tenants.Add(changeset.Entry{Stage: "git", Kind: "Commit", Subject: branch + " " + q.tip, Action: changeset.Unchanged})
	return pub, changeset.Result{Changes: tenants, Calls: map[string]int{"fetch": 1, "push": 0}}, true
}

// remember writes the record of a run that pushed commit, or found the
// branch at it, with files in the owned directory; only when it changes. A
// failure costs the next run a fetch, not this run its outcome.
func (p *Git) remember(ctx context.Context, commit string, files render.Tree, res *render.Result) {
	if p.check == nil || commit == "" {
		return
	}
	rec := noopRecord{Commit: commit, Files: treeFingerprint(p.Config.Git.Path, files)}
	if in := recordable(res); in != "" && res.Tree(nil).Equal(files) {
		rec.Inputs = in // the files are exactly this render
	}
	p.record(ctx, rec)
}

// record writes rec as the no-op record unless it holds it already.
func (p *Git) record(ctx context.Context, rec noopRecord) {
	q := p.check
	old := q.states[p.noopName()]
	if rec == q.record && old.Data != nil {
		return
	}
	data, _ := json.Marshal(rec)
	if _, err := p.repo.WriteState(ctx, p.noopName(), data, old.Commit); err != nil {
		logOrDiscard(p.Log).Warn("cannot write the no-op record; the next run fetches the branch", "error", err.Error())
	}
}

// treeFingerprint is a hash of the files of the owned directory path, with
// the version of the tool that rendered them.
func treeFingerprint(path string, t render.Tree) string {
	h := sha256.New()
	fmt.Fprintf(h, "waldur-gitops no-op record 1\x00%s\x00%s\x00%d\x00", version.String(), path, len(t))
	for _, name := range slices.Sorted(maps.Keys(t)) {
		data := t[name]
		h.Write(strconv.AppendInt([]byte(name+"\x00"), int64(len(data)), 10))
		h.Write([]byte{0})
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))
}
