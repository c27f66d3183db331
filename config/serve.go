package config

import (
	"path/filepath"
	"strings"
)

// CommitPlaceholder is what serve.commit_url replaces with a commit's SHA.
const CommitPlaceholder = "{commit}"

// Serve holds what only serve reads: its status page and its leader
// election.
type Serve struct {
	// CommitURL builds the link of a commit on the status page: a URL with
	// {commit} where the SHA goes, such as
	// https://git.example.org/site/-/commit/{commit}; "": no links.
	CommitURL string `yaml:"commit_url"`
	// StatusTokenFile names a file holding a bearer token (relative to the
	// config file). A status page request that carries it sees names (users,
	// reasons); without it the page shows counts and causes only.
	StatusTokenFile string `yaml:"status_token_file"`
	// LeaderElection lets several serve replicas share one installation:
	// the one holding a Lease runs, the others stand by.
	LeaderElection LeaderElection `yaml:"leader_election"`
}

// CommitLink is the link of commit by CommitURL, "" without a template or commit.
func (s *Serve) CommitLink(commit string) string {
	if s.CommitURL == "" || commit == "" {
		return ""
	}
	return strings.ReplaceAll(s.CommitURL, CommitPlaceholder, commit)
}

// StatusToken reads the bearer token of the status page, "" when none is
// configured. It is read at every call, so a rotated file needs no restart.
func (s *Serve) StatusToken() (Secret, error) {
	if s.StatusTokenFile == "" {
		return "", nil
	}
	return readSecretFile("serve.status_token_file", s.StatusTokenFile)
}

func (s *Serve) applyDefaults(dir string) {
	if s.StatusTokenFile != "" && !filepath.IsAbs(s.StatusTokenFile) {
		s.StatusTokenFile = filepath.Join(dir, s.StatusTokenFile)
	}
}

// validate checks the commit link template.
func (s *Serve) validate(r *report) {
	if s.CommitURL == "" {
		return
	}
	if !strings.Contains(s.CommitURL, CommitPlaceholder) {
		r.addf("serve.commit_url", nil, "must contain %s where the commit's SHA goes, got %q", CommitPlaceholder, s.CommitURL)
		return
	}
	checkURL("serve.commit_url", strings.ReplaceAll(s.CommitURL, CommitPlaceholder, "0"), "a link needs no credentials", r)
}
