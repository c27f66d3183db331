package metrics

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	"github.com/prometheus/common/expfmt"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/hostbound"
	redactpkg "github.com/waldur/waldur-gitops/internal/redact"
)

// Push sends everything g gathers to the Pushgateway of cfg with a PUT, which
// replaces the group the previous run of the same command pushed: the group is
// the job, the config's grouping labels and command (sync, apply, …), so that
// CronJobs of different commands sharing one config do not overwrite each
// other's results. It does nothing when cfg has no pushgateway_url. The error
// names the URL without credentials and never holds the password. No
// redirect is followed: one to another host would get the password and the
// metrics.
func Push(ctx context.Context, cfg *config.Metrics, command string, g prometheus.Gatherer) error {
	if cfg.PushgatewayURL == "" {
		return nil
	}
	shown := cfg.DisplayURL()
	user, pass, err := cfg.BasicAuth()
	if err != nil {
		return fmt.Errorf("push metrics to %s: %w", shown, err)
	}
	timeout := time.Duration(cfg.TimeoutSeconds) * time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p := push.New(cfg.PushgatewayURL, cfg.Job).Gatherer(g).
		Client(hostbound.Client(&http.Client{Timeout: timeout}, "metrics.pushgateway_url", hostbound.None)).
		Format(expfmt.NewFormat(expfmt.TypeTextPlain))
	for k, v := range cfg.Grouping {
		p = p.Grouping(k, v)
	}
	p = p.Grouping(GroupingCommand, command)
	if user != "" {
		p = p.BasicAuth(user, pass.Reveal())
	}
	if err := p.PushContext(ctx); err != nil {
		return fmt.Errorf("push metrics to %s (job %s): %w%s", shown, cfg.Job, redact(err, pass.Reveal()), refusedHint(err, user, cfg))
	}
	return nil
}

// refusedHint names where the credential was read from when the
// Pushgateway refused it (401 or 403); "" otherwise.
func refusedHint(err error, user string, cfg *config.Metrics) string {
	msg := err.Error()
	if user == "" || !strings.Contains(msg, "status code 401") && !strings.Contains(msg, "status code 403") {
		return ""
	}
	return " (check the credential, " + cfg.CredentialSource() + ")"
}

// GroupingCommand is the grouping label that names the command whose run was pushed.
const GroupingCommand = "command"

// redact keeps a password (in every form, and every secret registered from
// the config) out of an error text, should a proxy echo it back.
func redact(err error, secret string) error {
	return redactpkg.Default().With(secret).Error(err)
}

// PushRun pushes the metrics of one finished run (a Recorder that observed
// only it) as Push does, under the run's command. A run ended by SIGTERM
// (activeDeadlineSeconds, a node drain) must still report its failure: the
// push gets its own time limit, not ctx's cancellation.
func PushRun(ctx context.Context, cfg *config.Metrics, run Run, version string) error {
	rec := New(version)
	rec.Observe(run)
	return Push(context.WithoutCancel(ctx), cfg, run.Report.Command, rec.Registry())
}
