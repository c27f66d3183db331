package offboard

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
)

// Where a removal was seen in effect (report.Offboard.Verified).
const (
	// VerifiedApplied: the clusters accepted every object of the
	// offering's tenants as rendered (apply).
	VerifiedApplied = "applied"
	// VerifiedBranch: the commit holding the removal is on the branch; the
	// cluster was not read.
	VerifiedBranch = "branch"
)

// Published is what the publish left at its destination, in the words of
// the proof (the engine's Published).
type Published struct {
	// Before and After are the owned tree before the publish and as the
	// destination holds it now (a dry run: would hold it); for the
	// clusters, After holds the files of the tenants whose every object
	// was applied.
	Before, After render.Tree
	// Ref is the commit this run pushed; Base the branch tip before it.
	Ref, Base string
	// Applied is set when the destination is the clusters (apply).
	Applied bool
	// Incomplete: the publish failed somewhere as a whole.
	Incomplete bool
}

// Prove decides, for every user the run's Claim found leaving, whether
// Waldur may hear "deleted": the destination holds every tenant of the
// offering that named the user as rendered (pub; nil: nothing published)
// and, for an offering with keycloak_enabled, Keycloak read back lists the
// user in no managed group. Then set_deleted is sent and the time access
// ended recorded (now plus the realm's access-token lifespan). A removal
// Keycloak refused sends set_error_deleting; anything else not yet in effect
// leaves the user Deleting with the reason (removal_pending). With dryRun
// nothing is sent and the entries say what would be. It returns the entries
// and the report's offboarding records.
func (w *Workflow) Prove(ctx context.Context, res *render.Result, pub *Published, dryRun bool) (changeset.Result, []report.Offboard, error) {
	out := changeset.Result{Calls: map[string]int{}}
	if w.Source == nil && !dryRun {
		return out, w.records(), nil // a run that sends nothing has nothing to prove
	}
	users := map[string][]string{}
	for _, x := range w.run {
		if x.leaving && x.u.Username != "" && x.o.Settings.Common().KeycloakEnabled {
			users[x.o.Name] = append(users[x.o.Name], x.u.Username)
		}
	}
	views, kcErr := w.readBack(ctx, res, users, out.Calls)
	seen := map[string][]byte{}       // objects read from the clusters
	diffs := map[string]*difference{} // by offering
	refused := map[string]string{}
	if w.Refused != nil {
		refused = w.Refused()
	}
	var leaving []*user
	proofs := map[*user]proof{}
	for _, x := range w.run {
		if x.leaving {
			leaving = append(leaving, x)
			proofs[x] = w.proof(ctx, x, res, pub, views, kcErr, dryRun, seen, diffs)
		}
	}
	w.awaitCluster(ctx, proofs, func(x *user) proof { return w.proof(ctx, x, res, pub, views, kcErr, dryRun, seen, diffs) }, seen)
	for _, x := range leaving {
		p := proofs[x]
		if why, ok := refused[x.u.Username]; ok && x.u.Username != "" {
			p = proof{failed: "Keycloak refused to remove the user from a managed group: " + why}
		}
		out.Changes.Add(w.conclude(ctx, x, p, dryRun, out.Calls))
	}
	return out, w.records(), nil
}

// awaitCluster waits, like orders with order_done_on: applied, for the
// consumer to apply the removals the cluster does not show yet: it reads
// the cluster again every PollInterval and proves those users again
// (again), until each is proved otherwise than "the cluster still names
// the user", or its offering's order_done_timeout_seconds has passed since
// the wait began, or ctx ends. A user still pending then stays Deleting and
// the next run looks again. The objects that still named a waiting user are
// dropped from seen before each round; the others (already clean, or not
// on the cluster) are not read again.
func (w *Workflow) awaitCluster(ctx context.Context, proofs map[*user]proof, again func(*user) proof, seen map[string][]byte) {
	begin := w.now()
	for {
		ids := map[string]bool{}
		var waiting []*user
		for x, p := range proofs {
			if p.atCluster && w.now().Sub(begin) < time.Duration(x.o.DoneTimeoutSeconds())*time.Second {
				waiting = append(waiting, x)
				for _, n := range names(x.o, x.u) {
					ids[n] = true
				}
			}
		}
		if len(waiting) == 0 || w.sleep(ctx, w.pollInterval()) != nil {
			return
		}
		for k, data := range seen {
			if mentions(data, ids) {
				delete(seen, k)
			}
		}
		slices.SortFunc(waiting, func(a, b *user) int { return cmp.Compare(a.u.UUID, b.u.UUID) })
		for _, x := range waiting {
			proofs[x] = again(x)
		}
	}
}

// pollInterval is how often awaitCluster reads the cluster again.
func (w *Workflow) pollInterval() time.Duration {
	if w.PollInterval <= 0 {
		return 2 * time.Second
	}
	return w.PollInterval
}

// sleep waits d or until ctx ends (its error then).
func (w *Workflow) sleep(ctx context.Context, d time.Duration) error {
	if w.Sleep != nil {
		return w.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// records are the report's entries of the run's users, sorted by offering
// and user; nil when there are none.
func (w *Workflow) records() []report.Offboard {
	var recs []report.Offboard
	for _, x := range w.run {
		recs = append(recs, x.rec)
	}
	slices.SortFunc(recs, func(a, b report.Offboard) int {
		return cmp.Or(cmp.Compare(a.Offering, b.Offering), cmp.Compare(a.OfferingUser, b.OfferingUser))
	})
	return recs
}

// proof is what the run could prove of one user's removal.
type proof struct {
	// pending says why the removal is not seen in effect yet; failed why
	// it failed for good; both empty: proved.
	pending, failed string
	// atCluster: pending only because the cluster still names the user
	// (the consumer has not applied the removal yet).
	atCluster     bool
	commit, where string
	lifespan      time.Duration
	lifespanNote  string
}

// proof checks one user's removal at the destination and in Keycloak. A
// dry run, which removed nothing, takes the memberships Keycloak still
// lists as those its Keycloak pass plans to remove (it reads the realm for
// the token lifespan).
func (w *Workflow) proof(ctx context.Context, x *user, res *render.Result, pub *Published, views map[string]*keycloak.Leftover, kcErr error, dryRun bool, seen map[string][]byte, diffs map[string]*difference) proof {
	var p proof
	if why := blocked(x, res, pub, diffs); why != "" {
		return proof{pending: why}
	}
	if why, named := w.cluster(ctx, x, pub, dryRun, seen); why != "" {
		return proof{pending: why, atCluster: named}
	}
	p.where = VerifiedApplied
	if !pub.Applied {
		// The commit holding the removal: this run's, or the tip it found
		// when the removal was there already (a dry run that would commit
		// it names none).
		p.where, p.commit = VerifiedBranch, pub.Ref
		if p.commit == "" && equal(under(pub.Before, x.o.DirName()), under(pub.After, x.o.DirName())) {
			p.commit = pub.Base
		}
		if w.checksCluster(x, pub, dryRun) {
			p.where = VerifiedCluster
		}
	}
	if !x.o.Settings.Common().KeycloakEnabled {
		p.lifespanNote = "no Keycloak: the lifespan of tokens issued elsewhere is not known"
		return p
	}
	v := views[x.o.Name]
	switch {
	case w.Keycloak == nil:
		return proof{pending: "Keycloak is not read back in this run (no Keycloak pass)"}
	case kcErr != nil:
		return proof{pending: "Keycloak could not be read back: " + kcErr.Error()}
	case v == nil:
		return proof{pending: "Keycloak was not read back"}
	case dryRun && len(v.Groups[x.u.Username]) > 0:
		p.lifespanNote = "once the Keycloak pass removes the memberships in " + strings.Join(v.Groups[x.u.Username], ", ")
	case len(v.Groups[x.u.Username]) > 0:
		return proof{pending: fmt.Sprintf("Keycloak %s still lists the user in %s", v.Realm, strings.Join(v.Groups[x.u.Username], ", "))}
	}
	p.lifespan = v.TokenLifespan
	if !v.LifespanRead {
		p.lifespanNote = strings.TrimPrefix(p.lifespanNote+"; the realm's accessTokenLifespan was not readable, Keycloak's default taken", "; ")
	}
	return p
}

// checksCluster says whether x's removal is verified at the cluster: GitOps
// (not a dry run) for an offering with order_done_on: applied, whose
// cluster the tool reads.
func (w *Workflow) checksCluster(x *user, pub *Published, dryRun bool) bool {
	return w.Cluster != nil && !dryRun && !pub.Applied && x.o.OrderDoneOn == config.DoneOnApplied
}

// cluster says why the cluster still lets x in, when it is checked; named
// is true when an object there still names the user (not when the cluster
// could not be read).
func (w *Workflow) cluster(ctx context.Context, x *user, pub *Published, dryRun bool, seen map[string][]byte) (why string, named bool) {
	if !w.checksCluster(x, pub, dryRun) {
		return "", false
	}
	why, err := atCluster(ctx, w.Cluster, x, pub, seen)
	if err != nil {
		return "the cluster could not be read: " + err.Error(), false
	}
	return why, why != ""
}

// readBack reads Keycloak back for the leaving users, when the run has a
// Keycloak pass.
func (w *Workflow) readBack(ctx context.Context, res *render.Result, users map[string][]string, calls map[string]int) (map[string]*keycloak.Leftover, error) {
	if w.Keycloak == nil || len(users) == 0 || res == nil {
		return nil, nil
	}
	views, c, err := keycloak.ReadBack(ctx, w.Config, res, users, *w.Keycloak)
	for k, v := range c {
		calls["keycloak."+k] += v
	}
	return views, err
}

// conclude sends what the proof allows (set_deleted, set_error_deleting, or
// nothing) and records it.
func (w *Workflow) conclude(ctx context.Context, x *user, p proof, dryRun bool, calls map[string]int) changeset.Entry {
	e := changeset.Entry{Stage: ProofStage, Kind: KindOfferingUser, Subject: subject(x), Offering: x.o.Name}
	x.rec.Commit, x.rec.Verified = p.commit, p.where
	switch {
	case p.pending != "":
		e.Action, e.Cause, e.Reason = changeset.Skip, changeset.CauseRemovalPending, "stays Deleting: "+p.pending
		x.rec.Cause, x.rec.Reason = e.Cause, e.Reason
		return e
	case p.failed != "":
		return w.send(ctx, x, e, waldur.OfferingUserErrorDeleting, p.failed, dryRun, calls)
	}
	note := "removal in effect: applied to the clusters"
	switch p.where {
	case VerifiedCluster:
		note = "removal in effect: commit " + p.commit + " is on the branch and the cluster no longer names the user"
	case VerifiedBranch:
		note = "removal in effect: commit " + cmp.Or(p.commit, "to be made") + " is on the branch (not verified at the cluster)"
	}
	if p.lifespanNote != "" {
		note += "; " + p.lifespanNote
	}
	e = w.send(ctx, x, e, waldur.OfferingUserDeleted, note, dryRun, calls)
	if x.rec.State == waldur.OfferingUserDeleted { // in a dry run: when it would end
		x.rec.AccessEndedAt = w.now().Add(p.lifespan)
	}
	return e
}

// send moves the user to state (Deleted or Error deleting) with why.
func (w *Workflow) send(ctx context.Context, x *user, e changeset.Entry, state, why string, dryRun bool, calls map[string]int) changeset.Entry {
	e.Action, e.Reason = changeset.Update, "→ "+state+": "+why
	if state == waldur.OfferingUserErrorDeleting {
		e.Cause = changeset.CauseRemovalFailed
		x.rec.Cause, x.rec.Reason = e.Cause, why
	}
	if dryRun || w.Source == nil {
		e.Reason = "would move " + e.Reason
		x.rec.State = state
		return e
	}
	c, err := w.Source.Client(x.o)
	if err == nil {
		if state == waldur.OfferingUserDeleted {
			calls[waldur.KindOfferingUserDeleted]++
			err = c.SetOfferingUserDeleted(ctx, x.u.UUID)
		} else {
			calls[waldur.KindOfferingUserErrorDeleting]++
			err = c.SetOfferingUserErrorDeleting(ctx, x.u.UUID)
		}
	}
	if err != nil {
		e.Action, e.Cause, e.Reason = changeset.Skip, changeset.CauseAPIFailure, "stays Deleting: "+err.Error()
		x.rec.Cause, x.rec.Reason = e.Cause, e.Reason
		return e
	}
	x.rec.State = state
	setState(x.ost, x.u, state) // a later run on this state (serve) knows it
	w.log().Info("offboarding reported", "offering", x.o.Name, "offering_user", x.u.UUID, "username", x.u.Username, "state", state)
	return e
}

// blocked says why the removal of x from the tenants of its offering is not
// in effect at pub; "" when it is. A tenant directory the destination holds
// otherwise than rendered blocks it when its files there still name the
// user, or, in the clusters, when it was rendered but not applied. cache
// keeps each offering's differences for the run's other users (nil: none
// kept).
func blocked(x *user, res *render.Result, pub *Published, cache map[string]*difference) string {
	switch {
	case pub == nil || res == nil:
		return "nothing was published in this run"
	case pub.Incomplete:
		return "the publish did not complete"
	}
	diff := cache[x.o.Name]
	if diff == nil {
		diff = differences(x.o, res, pub)
		if cache != nil {
			cache[x.o.Name] = diff
		}
	}
	ids := map[string]bool{}
	for _, n := range names(x.o, x.u) {
		ids[n] = true
	}
	for _, d := range diff.dirs {
		have := diff.have[d]
		for _, p := range slices.Sorted(maps.Keys(have)) {
			if mentions(have[p], ids) {
				return "tenant " + d + " still grants the user access at the destination (" + p + ")"
			}
		}
		if pub.Applied && diff.missing[d] {
			return "tenant " + d + " was not applied"
		}
	}
	return ""
}

// difference is, for one offering, what the destination holds otherwise
// than rendered.
type difference struct {
	// dirs are the tenant directories that differ, sorted; have their files
	// at the destination; missing those rendered but absent there.
	dirs    []string
	have    map[string]map[string][]byte
	missing map[string]bool
}

// differences compares the offering's tenant directories at the
// destination with the render, each file once.
func differences(o *config.Offering, res *render.Result, pub *Published) *difference {
	want := map[string]map[string][]byte{}
	for _, t := range res.Tenants {
		if t.Offering == o.Name {
			files := map[string][]byte{}
			for _, f := range t.Files {
				files[t.Dir+"/"+f.Name] = f.Data
			}
			want[t.Dir] = files
		}
	}
	prefix := o.DirName() + "/"
	have := map[string]map[string][]byte{}
	for p, data := range pub.After {
		if strings.HasPrefix(p, prefix) {
			d := tenantDir(p)
			if have[d] == nil {
				have[d] = map[string][]byte{}
			}
			have[d][p] = data
		}
	}
	diff := &difference{have: have, missing: map[string]bool{}}
	dirs := maps.Clone(want)
	maps.Copy(dirs, have)
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if !equal(have[d], want[d]) {
			diff.dirs = append(diff.dirs, d)
			diff.missing[d] = len(want[d]) > 0 && len(have[d]) == 0
		}
	}
	return diff
}

// tenantDir is the tenant directory (offering/target/tenant) of a path.
func tenantDir(p string) string {
	parts := strings.SplitN(p, "/", 4)
	if len(parts) < 4 {
		return path.Dir(p)
	}
	return strings.Join(parts[:3], "/")
}

// under is the part of t in directory d.
func under(t render.Tree, d string) map[string][]byte {
	out := map[string][]byte{}
	for p, data := range t {
		if strings.HasPrefix(p, d+"/") {
			out[p] = data
		}
	}
	return out
}

func equal(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

// mentions reports whether a rendered YAML file names one of ids as a
// scalar: a subject's name, an item of a user list.
func mentions(data []byte, ids map[string]bool) bool {
	for line := range strings.Lines(string(data)) {
		t := strings.TrimSpace(line)
		t = strings.TrimPrefix(t, "- ")
		if _, v, ok := strings.Cut(t, ": "); ok {
			t = v
		}
		if ids[strings.Trim(t, `"'`)] {
			return true
		}
	}
	return false
}
