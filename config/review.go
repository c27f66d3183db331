package config

import (
	"net/url"
	"path/filepath"
	"strings"
)

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
	// Forge, when set, opens a pull or merge request for every review branch.
	Forge *Forge `yaml:"forge"`
}

// Forge types (review.forge.type).
const (
	ForgeGitHub = "github"
	ForgeGitea  = "gitea"
	ForgeGitLab = "gitlab"
)

// Forge is the hosting service whose API opens a pull (GitHub, Gitea) or
// merge (GitLab) request for a review branch.
type Forge struct {
	// Type is github, gitea or gitlab.
	Type string `yaml:"type"`
	// APIURL is the API root: https://api.github.com, https://gitea.example/api/v1,
	// https://gitlab.example/api/v4.
	APIURL string `yaml:"api_url"`
	// Repository is owner/name (GitHub, Gitea) or the project's path or id (GitLab).
	Repository string `yaml:"repository"`
	// TokenFile and TokenEnv hold the API token.
	TokenFile string `yaml:"token_file"`
	TokenEnv  string `yaml:"token_env"`
}

// Token reads the forge's API token.
func (f *Forge) Token() (Secret, error) {
	if f.TokenFile != "" {
		return readSecretFile("review.forge.token_file", f.TokenFile)
	}
	return readSecretEnv("review.forge.token_env", f.TokenEnv)
}

// Enabled reports whether any class goes to a review branch.
func (r Review) Enabled() bool { return r.Additive == ReviewBranch || r.Risky == ReviewBranch }

func (r *Review) applyDefaults(dir string) {
	if f := r.Forge; f != nil {
		f.Type = strings.ToLower(strings.TrimSpace(f.Type))
		if f.TokenFile != "" && !filepath.IsAbs(f.TokenFile) {
			f.TokenFile = filepath.Join(dir, f.TokenFile)
		}
	}
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
	f := r.Forge
	if f == nil {
		return
	}
	checkOneOf("review.forge.type", f.Type, []string{ForgeGitHub, ForgeGitea, ForgeGitLab}, rep)
	if u, err := url.Parse(f.APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		rep.addf("review.forge.api_url", nil, "must be an http(s) URL such as https://api.github.com, got %q", f.APIURL)
	}
	if f.Repository == "" || (f.Type != ForgeGitLab && strings.Count(f.Repository, "/") != 1) {
		rep.addf("review.forge.repository", nil, "must name the repository as owner/name (the project path or id for gitlab), got %q", f.Repository)
	}
	if (f.TokenFile == "") == (f.TokenEnv == "") {
		rep.addf("review.forge.token_file", nil, "set exactly one of review.forge.token_file and review.forge.token_env")
	}
}
