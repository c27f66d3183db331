// Package confirm is confirm-before-delete, next to the removal policy: a
// tenant leaves only when Waldur explains or confirms its resource gone;
// the rest are kept, and the explained removals go to the guard as such.
package confirm

import (
	"context"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// Confirmer asks Waldur directly about resources whose tenant is about to
// be removed although nothing in the listing explains it (no Terminate
// order, not listed as Terminated): absence from a listing is not enough.
type Confirmer interface {
	// Confirm reads each resource of the named offering and returns those
	// Waldur positively reports gone, with why; every other resource is in
	// doubt and keeps its tenant.
	Confirm(ctx context.Context, offering string, ids []waldur.UUID) (map[waldur.UUID]Gone, error)
}

// Gone is Waldur's positive word that a resource's tenant may leave.
type Gone struct {
	Why string
	// Terminated is set when Waldur reports the resource Terminating or
	// Terminated: its removal is explained, like one with a Terminate order.
	// A 404 lets the tenant leave too, but the deletion guard still counts
	// it: a wrong token or offering answers 404 for everything.
	Terminated bool
}

// Removals plans what publishing res over cur removes, and settles every
// removal that nothing explains: a resource Waldur lists as Terminated is
// explained; any other is confirmed with confirm, and kept (added to
// res.Kept, so the tree, the orders and the identities leave it alone) unless
// Waldur positively reports it gone. Without a confirmer (a snapshot) the
// recorded state is taken at its word. It returns the resources whose
// removal Waldur explains (listed or confirmed Terminated), to why, for the
// guard, and a skip entry (stage stage) for every tenant kept in doubt.
func Removals(ctx context.Context, cfg *config.Config, res *render.Result, cur render.Tree, confirm Confirmer, stage string) (map[string]string, changeset.Set) {
	explained := ExplainGone(map[string]string{}, res)
	doubtful := map[string][]waldur.UUID{} // offering → resources
	for _, r := range res.Removals(cur) {
		if r.Resource == "" || len(res.Terminations[r.Resource]) > 0 || explained[string(r.Resource)] != "" {
			continue
		}
		if name := OfferingOfDir(cfg, r.Dir); name != "" && !slices.Contains(doubtful[name], r.Resource) {
			doubtful[name] = append(doubtful[name], r.Resource)
		}
	}
	var kept changeset.Set
	if confirm == nil {
		return explained, kept
	}
	for offering, ids := range doubtful {
		keep, sure := Settle(ctx, confirm, offering, ids, res)
		maps.Copy(res.Kept, keep)
		maps.Copy(explained, sure)
		for id, why := range keep {
			kept.Add(changeset.Entry{Stage: stage, Kind: "Resource", Subject: offering + "/" + string(id), Action: changeset.Skip,
				Offering: offering, Resource: string(id), Reason: "tenant kept: " + why, Cause: changeset.CauseTenantKept})
		}
	}
	kept.Sort()
	return explained, kept
}

// ExplainGone adds to explained (made when nil and needed) why each
// resource Waldur lists as Terminated (res.Gone) may leave, for the deletion
// guard, and returns it.
func ExplainGone(explained map[string]string, res *render.Result) map[string]string {
	for id, why := range res.Gone {
		if explained == nil {
			explained = map[string]string{}
		}
		explained[string(id)] = why
	}
	return explained
}

// Settle confirms the removal of ids with Waldur: keep maps those to leave
// alone to why, explained those Waldur reports terminated. Resources Waldur
// lists as Terminated (res.Gone) need no question.
func Settle(ctx context.Context, confirm Confirmer, offering string, ids []waldur.UUID, res *render.Result) (keep map[waldur.UUID]string, explained map[string]string) {
	keep, explained = map[waldur.UUID]string{}, map[string]string{}
	var ask []waldur.UUID
	for _, id := range ids {
		if why, ok := res.Gone[id]; ok {
			explained[string(id)] = why
		} else {
			ask = append(ask, id)
		}
	}
	if len(ask) == 0 {
		return keep, explained
	}
	gone, err := confirm.Confirm(ctx, offering, ask)
	for _, id := range ask {
		switch v, ok := gone[id]; {
		case ok && v.Terminated:
			explained[string(id)] = v.Why
		case ok:
		case err != nil:
			keep[id] = "absent from Waldur's listing, and reading it failed: " + err.Error()
		default:
			keep[id] = "absent from Waldur's listing, but a direct read finds it: kept until Waldur says it is gone"
		}
	}
	return keep, explained
}

// OfferingOfDir is the config name of the offering a tenant directory
// (<offering dir>/<target>/<tenant>, possibly below git.path) belongs to.
func OfferingOfDir(cfg *config.Config, dir string) string {
	parts := strings.Split(path.Clean(dir), "/")
	if len(parts) < 3 {
		return ""
	}
	d := parts[len(parts)-3]
	for i := range cfg.Offerings {
		if cfg.Offerings[i].DirName() == d {
			return cfg.Offerings[i].Name
		}
	}
	return ""
}

// Scopes are the parts of the site the deletion guard also counts in: the
// offering and the offering's target directory of a tenant.
func Scopes(e changeset.Entry) []string {
	parts := strings.Split(e.Subject, "/")
	if len(parts) < 3 {
		return nil
	}
	off, target := parts[len(parts)-3], parts[len(parts)-2]
	return []string{"offering " + off, "target " + off + "/" + target}
}
