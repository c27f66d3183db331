package publish

import (
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/guard/confirm"
	"github.com/waldur/waldur-gitops/render"
)

// ScopeCause says why a Git publish laid the whole render over the whole
// tree instead of the tenants the render re-rendered alone. It is logged
// at debug.
type ScopeCause string

// The reasons a Git publish compares and commits the whole tree.
const (
	// ScopeNoLastPublish: this publisher has not published yet, or its
	// last publish failed or could not be scoped itself.
	ScopeNoLastPublish ScopeCause = "no_last_publish"
	// ScopeConfigChanged: the last publish was made with another config.
	ScopeConfigChanged ScopeCause = "config_changed"
	// ScopeDryRun: a dry run plans on a fresh fetch.
	ScopeDryRun ScopeCause = "dry_run"
	// ScopeReview: review routing is on, or the run has a tenant to route.
	ScopeReview ScopeCause = "review"
	// ScopeFluxLayout: git.flux_shards (or a layout built on it) adds
	// files drawn from every tenant.
	ScopeFluxLayout ScopeCause = "flux_layout"
	// ScopeCarriedOver: the render carries tenants over from the tree
	// (skipped, kept or unread ones).
	ScopeCarriedOver ScopeCause = "carried_over"
	// ScopeTipMoved: the branch is not where this publisher left it (a
	// hand edit, another writer, a lost race).
	ScopeTipMoved ScopeCause = "tip_moved"
	// ScopeTenantsRemoved: a tenant of the last publish is gone from the
	// render: its removal goes through the confirmation and the guard.
	ScopeTenantsRemoved ScopeCause = "tenants_removed"
	// ScopeTreeShape: the render or the tree is not the plain set of
	// tenant directories the scoped compare assumes.
	ScopeTreeShape ScopeCause = "tree_shape"
)

// lastPublish is what a Git publisher remembers of its last publish for
// the next one to take unchanged tenants from: the config, the branch tip
// after it, and the tenants by directory, which a render remembering its
// last one (render.Memory) hands back as the same *render.Tenant when it
// did not render them again.
type lastPublish struct {
	cfg     *config.Config
	tip     string
	tenants map[string]*render.Tenant
	files   int // files of the owned directory: the marker and the tenants'
	site    int // access pairs in the tree (guard.FilesPairs); -1 unknown
}

// scoped is a plan made from the tenants re-rendered alone.
type scoped struct {
	next    render.Tree
	tenants changeset.Set
	paths   []string         // files added, changed or removed
	files   []string         // every file of the re-rendered tenants, before and after
	changed []*render.Tenant // the re-rendered tenants
}

// scopeCause is why this publish cannot be scoped before the branch is
// fetched; "" when it may be.
func (p *Git) scopeCause(res *render.Result, o Options, useReview bool) ScopeCause {
	g := p.Config.Git
	switch {
	case o.DryRun:
		return ScopeDryRun
	case p.last == nil:
		return ScopeNoLastPublish
	case p.last.cfg != p.Config:
		return ScopeConfigChanged
	case useReview:
		return ScopeReview
	case g.FluxShards > 0 || g.FluxOCIRepository != "" || g.FluxShardBranches:
		return ScopeFluxLayout
	case len(res.Skipped) > 0 || len(res.Kept) > 0 || len(res.Unread) > 0:
		return ScopeCarriedOver
	}
	return ""
}

// plainTenant reports whether tn is a tenant directory the scoped compare
// handles: offering/target/name, clean, with files.
func plainTenant(tn *render.Tenant) bool {
	return len(tn.Files) > 0 && strings.Count(tn.Dir, "/") == 2 && path.Clean(tn.Dir) == tn.Dir && !strings.HasPrefix(tn.Dir, "/")
}

// planScoped plans the publish of res on cur from the tenants the render
// re-rendered alone, taking every other tenant from cur as the last
// publish left it; nil and the cause when it cannot.
func (p *Git) planScoped(res *render.Result, cur render.Tree) (*scoped, ScopeCause) {
	last := p.last
	if p.repo.Tip() != last.tip {
		return nil, ScopeTipMoved
	}
	if len(cur) != last.files {
		return nil, ScopeTreeShape
	}
	s := &scoped{}
	seen := 0
	for i, tn := range res.Tenants {
		if (i > 0 && tn.Dir <= res.Tenants[i-1].Dir) || !plainTenant(tn) {
			return nil, ScopeTreeShape
		}
		old := last.tenants[tn.Dir]
		if old != nil {
			seen++
		}
		if old != tn {
			s.changed = append(s.changed, tn)
		}
	}
	if seen != len(last.tenants) {
		return nil, ScopeTenantsRemoved
	}
	s.next = maps.Clone(cur)
	actions := make(map[string]changeset.Action, len(s.changed))
	for _, tn := range s.changed {
		actions[tn.Dir] = s.lay(tn, last.tenants[tn.Dir], cur)
	}
	for _, tn := range res.Tenants {
		e := changeset.Entry{Stage: "render", Kind: "Tenant", Subject: tn.Dir, Action: changeset.Unchanged,
			Resource: string(tn.Resource), Offering: tn.Offering}
		if a, ok := actions[tn.Dir]; ok {
			e.Action = a
		}
		for _, o := range tn.Orders {
			e.Orders = append(e.Orders, string(o))
		}
		s.tenants.Add(e)
	}
	return s, ""
}

// lay puts tn's files in s.next in place of old's (nil: a new tenant) and
// says what that does to the tenant, as render.Result.Compare would.
func (s *scoped) lay(tn, old *render.Tenant, cur render.Tree) changeset.Action {
	differs := false
	now := make(map[string]bool, len(tn.Files))
	for _, f := range tn.Files {
		p := tn.Dir + "/" + f.Name
		now[p] = true
		s.files = append(s.files, p)
		if prev, ok := cur[p]; !ok || string(prev) != string(f.Data) {
			s.paths = append(s.paths, p)
			differs = true
		}
		s.next[p] = f.Data
	}
	if old == nil {
		return changeset.Create
	}
	for _, f := range old.Files {
		p := old.Dir + "/" + f.Name
		s.files = append(s.files, p)
		if !now[p] {
			delete(s.next, p)
			s.paths = append(s.paths, p)
			differs = true
		}
	}
	if differs {
		return changeset.Update
	}
	return changeset.Unchanged
}

// checkScoped runs the guards of a publish on a scoped plan: the deletion
// guard (no tenant is removed, so it counts the tenants in place) and the
// access guard over the re-rendered tenants' files alone.
func (p *Git) checkScoped(res *render.Result, s *scoped, cur render.Tree, o Options) error {
	explained := confirm.ExplainGone(nil, res)
	gone := guard.TenantRemovals(guard.Tenants, s.tenants, explained, confirm.Scopes)
	if err := guard.Check(guard.Tenants, gone, guard.TenantsInPlace(s.tenants, confirm.Scopes), o.Guard); err != nil {
		return err
	}
	if o.Guard.Allow || len(s.tenants.ByAction(changeset.Update)) == 0 {
		return nil
	}
	if p.last.site < 0 {
		p.last.site = guard.FilesPairs(cur, slices.Collect(maps.Keys(cur)))
	}
	return guard.CheckFilesAccess(cur, s.next, s.files, p.last.site, s.tenants, o.Guard)
}

// after is the lastPublish a successful scoped publish leaves.
func (s *scoped) after(last *lastPublish, cur render.Tree, tip string) *lastPublish {
	n := *last
	n.tip, n.files = tip, len(s.next)
	n.tenants = last.tenants // the same map: no tenant was removed
	for _, tn := range s.changed {
		n.tenants[tn.Dir] = tn
	}
	if n.site >= 0 {
		n.site += guard.FilesPairs(s.next, s.files) - guard.FilesPairs(cur, s.files)
	}
	return &n
}

// remembered is the lastPublish a successful whole-tree publish of res
// leaves, nil when a later publish could not take tenants from it: when
// its tree is not exactly the marker and the tenants of res.
func (p *Git) remembered(res *render.Result, after render.Tree, tip string, cause ScopeCause) *lastPublish {
	switch cause {
	case ScopeDryRun, ScopeReview, ScopeFluxLayout, ScopeCarriedOver:
		return nil
	}
	if len(res.Skipped) > 0 || len(res.Kept) > 0 || len(res.Unread) > 0 {
		return nil
	}
	l := &lastPublish{cfg: p.Config, tip: tip, tenants: make(map[string]*render.Tenant, len(res.Tenants)), files: 1, site: -1}
	for i, tn := range res.Tenants {
		if (i > 0 && tn.Dir <= res.Tenants[i-1].Dir) || !plainTenant(tn) {
			return nil
		}
		l.tenants[tn.Dir] = tn
		l.files += len(tn.Files)
	}
	if _, ok := after[render.MarkerFile]; !ok || len(after) != l.files {
		return nil
	}
	return l
}
