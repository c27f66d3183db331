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
