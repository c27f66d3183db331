package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
)

// TestDeadlineKeys: run_timeout is unset by default (each command picks its
// own), git.timeout defaults to 2m, both take Go durations, and a value that
// is not a positive duration is refused under its key.
func TestDeadlineKeys(t *testing.T) {
	l := mustParse(t, oneOffering("namespace", "", ""))
	if l.RunDeadline() != 0 || l.Git.FetchTimeout() != config.DefaultGitTimeout {
		t.Errorf("defaults: run %s, git %s", l.RunDeadline(), l.Git.FetchTimeout())
	}
	l = mustParse(t, "run_timeout: 4m30s\n"+"git:\n  timeout: 45s\n"+oneOffering("namespace", "", ""))
	if l.RunDeadline() != 4*time.Minute+30*time.Second || l.Git.FetchTimeout() != 45*time.Second {
		t.Errorf("set: run %s, git %s", l.RunDeadline(), l.Git.FetchTimeout())
	}
	for _, tc := range []struct{ key, text string }{
		{"run_timeout", "run_timeout: soon\n" + oneOffering("namespace", "", "")},
		{"run_timeout", "run_timeout: -1m\n" + oneOffering("namespace", "", "")},
		{"git.timeout", "git:\n  timeout: 0s\n" + oneOffering("namespace", "", "")},
	} {
		t.Run(tc.key, func(t *testing.T) {
			_, problems := mustFail(t, tc.text)
			if p := findProblem(t, problems, tc.key); !strings.Contains(p.Message, "must be a positive duration") {
				t.Errorf("%s: %q", tc.key, p.Message)
			}
		})
	}
}

// TestServeKeys: serve.commit_url needs {commit} and an http(s) URL, and
// builds links; status_token_file is read relative to the config file.
func TestServeKeys(t *testing.T) {
	l := mustParse(t, "serve:\n  commit_url: https://git.example.org/site/-/commit/{commit}\n"+oneOffering("namespace", "", ""))
	if got := l.Serve.CommitLink("abc123"); got != "https://git.example.org/site/-/commit/abc123" {
		t.Errorf("link: %q", got)
	}
	if got := l.Serve.CommitLink(""); got != "" {
		t.Errorf("link of no commit: %q", got)
	}
	if tok, err := l.Serve.StatusToken(); err != nil || tok != "" {
		t.Errorf("no token file: %q, %v", tok, err)
	}
	for _, tc := range []struct{ name, value, want string }{
		{"no placeholder", "https://git.example.org/site/-/commit/", "must contain {commit}"},
		{"not http", "ftp://git.example.org/{commit}", "must be an http or https URL"},
		{"user info", "https://u:p@git.example.org/{commit}", "must not contain user information"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := mustFail(t, "serve:\n  commit_url: "+tc.value+"\n"+oneOffering("namespace", "", ""))
			if p := findProblem(t, problems, "serve.commit_url"); !strings.Contains(p.Message, tc.want) {
				t.Errorf("%q", p.Message)
			}
		})
	}
}

// TestLeaderElectionKeys: serve.leader_election defaults to controller-
// runtime's durations on the Lease waldur-gitops, and every key that cannot
// work is refused under its own path.
func TestLeaderElectionKeys(t *testing.T) {
	l := mustParse(t, oneOffering("namespace", "", ""))
	le := l.Serve.LeaderElection
	if le.Enabled || le.LeaseName != config.DefaultLeaseName || le.Namespace != "" ||
		le.Durations() != (config.ElectionDurations{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}) {
		t.Errorf("defaults: %+v %+v", le, le.Durations())
	}
	l = mustParse(t, "serve:\n  leader_election: {enabled: true, lease_name: gitops-a, namespace: tools, lease_duration: 3s, renew_deadline: 2s, retry_period: 500ms}\n"+
		oneOffering("namespace", "", ""))
	if le := l.Serve.LeaderElection; !le.Enabled || le.LeaseName != "gitops-a" || le.Namespace != "tools" || le.Durations().RetryPeriod != 500*time.Millisecond {
		t.Errorf("set: %+v %+v", le, le.Durations())
	}
	for _, tc := range []struct{ name, keys, key, msg string }{
		{"not a duration", "lease_duration: long", "serve.leader_election.lease_duration", "must be a positive duration"},
		{"negative", "retry_period: -2s", "serve.leader_election.retry_period", "must be a positive duration"},
		{"zero", "renew_deadline: 0s", "serve.leader_election.renew_deadline", "must be a positive duration"},
		{"fraction of a second", "lease_duration: 15500ms", "serve.leader_election.lease_duration", "whole seconds"},
		{"lease not above renew", "lease_duration: 10s", "serve.leader_election.lease_duration", "longer than renew_deadline"},
		{"renew within a retry", "renew_deadline: 2s", "serve.leader_election.renew_deadline", "retry_period"},
		{"bad lease name", "lease_name: Gitops_A", "serve.leader_election.lease_name", "not a valid object name"},
		{"bad namespace", "namespace: a.b", "serve.leader_election.namespace", "not a valid namespace name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := mustFail(t, "serve:\n  leader_election: {"+tc.keys+"}\n"+oneOffering("namespace", "", ""))
			if p := findProblem(t, problems, tc.key); !strings.Contains(p.Message, tc.msg) {
				t.Errorf("%s: %q", tc.key, p.Message)
			}
		})
	}
}
