package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
)

func TestOrderAndUsageKeys(t *testing.T) {
	l := mustParse(t, oneOffering("namespace", "", ""))
	o := l.Offerings[0]
	if !o.AutoApproves() || o.OrderDoneOn != config.DoneOnCommit || o.DoneTimeoutSeconds() != 300 {
		t.Errorf("defaults: auto %v done_on %q timeout %d", o.AutoApproves(), o.OrderDoneOn, o.DoneTimeoutSeconds())
	}
	l = mustParse(t, oneOffering("namespace", "", "    auto_approve: false\n    order_done_on: Applied\n    order_done_timeout_seconds: 60\n"+
		"    backend_components:\n      cpu_hours: {accounting_type: usage, measured_from: requests.nvidia.com/gpu}\n"))
	o = l.Offerings[0]
	if o.AutoApproves() || o.OrderDoneOn != config.DoneOnApplied || o.DoneTimeoutSeconds() != 60 || o.BackendComponents["cpu_hours"].MeasuredFrom != "requests.nvidia.com/gpu" {
		t.Errorf("set: %+v", o)
	}

	_, problems := mustFail(t, oneOffering("namespace", "", "    order_done_on: pushed\n    order_done_timeout_seconds: 0\n"+
		"    backend_components:\n      cpu: {accounting_type: limit, measured_from: requests.cpu}\n      gpu_hours: {accounting_type: usage, measured_from: \"not a key\"}\n"))
	for path, want := range map[string]string{
		"offerings[0].order_done_on":                              "must be one of commit, committed, applied",
		"offerings[0].order_done_timeout_seconds":                 "between 1 and 3600",
		"offerings[0].backend_components.cpu.measured_from":       "only a component with accounting_type usage",
		"offerings[0].backend_components.gpu_hours.measured_from": "is not a ResourceQuota key",
	} {
		if p := findProblem(t, problems, path); !strings.Contains(p.Message, want) {
			t.Errorf("%s: %q, want %q", path, p.Message, want)
		}
	}
}

// usage.allocation defaults to peak, takes time_weighted, and refuses anything
// else under its key.
func TestUsageAllocation(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"default", "", config.AllocationPeak},
		{"peak", "usage: {allocation: peak}\n", config.AllocationPeak},
		{"time_weighted", "usage:\n  allocation: time_weighted\n", config.AllocationTimeWeighted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustParse(t, tc.text+oneOffering("namespace", "", ""))
			if l.Usage.Allocation != tc.want {
				t.Errorf("allocation %q, want %q", l.Usage.Allocation, tc.want)
			}
		})
	}
	_, problems := mustFail(t, "usage: {allocation: average}\n"+oneOffering("namespace", "", ""))
	if p := findProblem(t, problems, "usage.allocation"); !strings.Contains(p.Message, `must be peak or time_weighted, got "average"`) {
		t.Errorf("message %q", p.Message)
	}
}

// quota_shrink defaults to hold, takes allow in any case, and refuses anything
// else under its key.
func TestQuotaShrink(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"default", "", config.QuotaShrinkHold},
		{"hold", "    quota_shrink: hold\n", config.QuotaShrinkHold},
		{"allow", "    quota_shrink: Allow\n", config.QuotaShrinkAllow},
		{"review", "    quota_shrink: review\n", config.QuotaShrinkReview},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustParse(t, oneOffering("namespace", "", tc.text))
			if got := l.Offerings[0].QuotaShrink; got != tc.want {
				t.Errorf("quota_shrink %q, want %q", got, tc.want)
			}
		})
	}
	_, problems := mustFail(t, oneOffering("namespace", "", "    quota_shrink: ignore\n"))
	if p := findProblem(t, problems, "offerings[0].quota_shrink"); !strings.Contains(p.Message, `must be one of hold, allow, review, got "ignore"`) {
		t.Errorf("message %q", p.Message)
	}
}

// review.additive and review.risky default to direct, take branch, and
// refuse anything else under their key.
func TestReviewKeys(t *testing.T) {
	l := mustParse(t, oneOffering("namespace", "", ""))
	if l.Review.Additive != config.ReviewDirect || l.Review.Risky != config.ReviewDirect || l.Review.Enabled() {
		t.Errorf("defaults %+v", l.Review)
	}
	l = mustParse(t, "review: {risky: Branch}\n"+oneOffering("namespace", "", ""))
	if l.Review.Risky != config.ReviewBranch || !l.Review.Enabled() {
		t.Errorf("set %+v", l.Review)
	}
	_, problems := mustFail(t, "review: {risky: pr}\n"+oneOffering("namespace", "", ""))
	if p := findProblem(t, problems, "review.risky"); !strings.Contains(p.Message, `must be one of direct, branch, got "pr"`) {
		t.Errorf("message %q", p.Message)
	}
}

// review.forge: the type, the API URL, the repository and exactly one token
// source are checked, each under its key.
func TestReviewForge(t *testing.T) {
	l := mustParse(t, "review:\n  risky: branch\n  forge: {type: GitLab, api_url: https://gitlab.example/api/v4, repository: site/tenants, token_file: forge.token}\n"+oneOffering("namespace", "", ""))
	if f := l.Review.Forge; f == nil || f.Type != config.ForgeGitLab || !strings.HasSuffix(f.TokenFile, "/forge.token") || !strings.HasPrefix(f.TokenFile, "/") {
		t.Errorf("forge %+v", l.Review.Forge)
	}
	_, problems := mustFail(t, "review:\n  forge: {type: bitbucket, api_url: ftp://x, repository: tenants}\n"+oneOffering("namespace", "", ""))
	for path, want := range map[string]string{
		"review.forge.type":       "must be one of github, gitea, gitlab",
		"review.forge.api_url":    "must be an http(s) URL",
		"review.forge.repository": "owner/name",
		"review.forge.token_file": "exactly one of review.forge.token_file and review.forge.token_env",
	} {
		if p := findProblem(t, problems, path); !strings.Contains(p.Message, want) {
			t.Errorf("%s: %q, want %q", path, p.Message, want)
		}
	}
}

// The site agent's web-STOMP keys are checked under their names.
func TestStompKeys(t *testing.T) {
	_, problems := mustFail(t, oneOffering("namespace", "", "    stomp_enabled: true\n    stomp_ws_port: 70000\n    stomp_ws_path: rmqws\n    stomp_ws_host: wss://mq.example.org\n"))
	for path, want := range map[string]string{
		"offerings[0].stomp_ws_port": "between 1 and 65535",
		"offerings[0].stomp_ws_path": "must start with /",
		"offerings[0].stomp_ws_host": "without scheme, port or path",
	} {
		if p := findProblem(t, problems, path); !strings.Contains(p.Message, want) {
			t.Errorf("%s: %q, want %q", path, p.Message, want)
		}
	}
}

// TestWriteBackKeys: orders.run_interval defaults to the example CronJob's
// 15m and serve's interval replaces it; orders.write_concurrency defaults
// to 16; values out of range are refused under their key.
func TestWriteBackKeys(t *testing.T) {
	l := mustParse(t, oneOffering("namespace", "", ""))
	if l.Orders.Every() != 15*time.Minute || l.Orders.Writers() != config.DefaultWriteConcurrency || config.DefaultWriteConcurrency != 16 {
		t.Errorf("defaults: every %s, writers %d", l.Orders.Every(), l.Orders.Writers())
	}
	l = mustParse(t, "orders:\n  run_interval: 5m\n  write_concurrency: 3\n"+oneOffering("namespace", "", ""))
	if l.Orders.Every() != 5*time.Minute || l.Orders.Writers() != 3 {
		t.Errorf("set: every %s, writers %d", l.Orders.Every(), l.Orders.Writers())
	}
	l.Orders.SetEvery(time.Minute)
	if l.Orders.Every() != time.Minute {
		t.Errorf("serve's interval: %s", l.Orders.Every())
	}
	for _, tc := range []struct{ key, text, want string }{
		{"orders.run_interval", "orders:\n  run_interval: often\n", "must be a positive duration"},
		{"orders.run_interval", "orders:\n  run_interval: 0s\n", "must be a positive duration"},
		{"orders.write_concurrency", "orders:\n  write_concurrency: 65\n", "between 1 and 64"},
		{"orders.write_concurrency", "orders:\n  write_concurrency: -2\n", "between 1 and 64"},
	} {
		t.Run(tc.key+" "+tc.text, func(t *testing.T) {
			_, problems := mustFail(t, tc.text+oneOffering("namespace", "", ""))
			if p := findProblem(t, problems, tc.key); !strings.Contains(p.Message, tc.want) {
				t.Errorf("%s: %q", tc.key, p.Message)
			}
		})
	}
}
