package config

import "strings"

// How a class of changes reaches the branch (review.additive, review.risky).
const (
	// ReviewDirect commits the change on git.branch, as without review.
	ReviewDirect = "direct"
	// ReviewBranch commits it on a review branch for a person to merge.
	ReviewBranch = "branch"
)

// Review says, per class of change, whether it is committed on git.branch
// or waits on a review branch (see docs/review.md).
type Review struct {
	// Additive changes: a new tenant, a quota raised, a member added, a
	// label or annotation changed (default direct).
	Additive string `yaml:"additive"`
	// Risky changes: a tenant removed, a quota lowered, a member removed,
	// objects removed from a tenant (default direct).
	Risky string `yaml:"risky"`
}

// Enabled reports whether any class goes to a review branch.
func (r Review) Enabled() bool { return r.Additive == ReviewBranch || r.Risky == ReviewBranch }

func (r *Review) applyDefaults() {
	for _, p := range []*string{&r.Additive, &r.Risky} {
		*p = strings.ToLower(strings.TrimSpace(*p))
		if *p == "" {
			*p = ReviewDirect
		}
	}
}

func (r *Review) validate(rep *report) {
	checkOneOf("review.additive", r.Additive, []string{ReviewDirect, ReviewBranch}, rep)
	checkOneOf("review.risky", r.Risky, []string{ReviewDirect, ReviewBranch}, rep)
}
