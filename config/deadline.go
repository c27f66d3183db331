package config

import "time"

// DefaultRunTimeout bounds a one-shot run (run_timeout): below the example
// CronJob's activeDeadlineSeconds of 600, so that a run cut by it still
// writes its report, prints its summary and pushes its metrics before the
// Job is killed.
const DefaultRunTimeout = 9 * time.Minute

// DefaultGitTimeout bounds one fetch and one push (git.timeout).
const DefaultGitTimeout = 2 * time.Minute

// applyDeadlineDefaults reads run_timeout and git.timeout; an empty
// run_timeout stays empty, so that serve can tell it from a set one.
func (c *Config) applyDeadlineDefaults() {
	c.runTimeout, _ = time.ParseDuration(c.RunTimeout)
	if c.Git.Timeout == "" {
		c.Git.Timeout = "2m" // DefaultGitTimeout, as written in docs/config.md
	}
	c.Git.timeout, _ = time.ParseDuration(c.Git.Timeout)
}

// validateDeadlines checks run_timeout and git.timeout.
func (c *Config) validateDeadlines(r *report) {
	if d, err := time.ParseDuration(c.RunTimeout); c.RunTimeout != "" && (err != nil || d <= 0) {
		r.addf("run_timeout", nil, "must be a positive duration such as 9m or 1h, got %q", c.RunTimeout)
	}
	if d, err := time.ParseDuration(c.Git.Timeout); err != nil || d <= 0 {
		r.addf("git.timeout", nil, "must be a positive duration such as 2m or 30s, got %q", c.Git.Timeout)
	}
}

// RunDeadline is run_timeout: how long one run may take, zero when the
// config does not set it (one-shot commands then take DefaultRunTimeout,
// serve its interval).
func (c *Config) RunDeadline() time.Duration { return c.runTimeout }

// FetchTimeout is git.timeout: how long one fetch or one push may take.
func (g *Git) FetchTimeout() time.Duration {
	if g.timeout <= 0 {
		return DefaultGitTimeout
	}
	return g.timeout
}
