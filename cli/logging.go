package cli

import (
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/internal/redact"
)

// loadConfig reads the config named by --config and sets up logging.
func (a *app) loadConfig() (*config.Loaded, error) {
	if a.configPath == "" {
		return nil, usageErr("--config is required")
	}
	cfg, err := config.Load(a.configPath)
	if err != nil {
		return nil, failure.Classify(failure.ClassConfig, err)
	}
	level := a.logLevel
	if level == "" {
		level = cfg.LogLevel
	}
	a.log = newLogger(a.errOut(), level)
	for _, w := range cfg.Warnings {
		if a.warned[w] {
			continue
		}
		if a.warned == nil {
			a.warned = map[string]bool{}
		}
		a.warned[w] = true
		a.log.Warn("config key ignored", "file", cfg.Path, "key", strings.SplitN(w, ":", 2)[0], "detail", w)
	}
	return cfg, nil
}

// newLogger logs text to a terminal and JSON otherwise.
func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	switch strings.ToLower(level) {
	case "debug":
		l = slog.LevelDebug
	case "warning", "warn":
		l = slog.LevelWarn
	case "error", "critical":
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	// Every log line passes the one redactor: no secret reaches a log.
	opts := &slog.HandlerOptions{Level: l, ReplaceAttr: redact.ReplaceAttr}
	if isTTY(w) {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// logLevels are the values of --log-level, as of the config's log_level
// (which also takes warn and critical).
var logLevels = []string{"debug", "info", "warning", "error"}

// checkLogLevel refuses a --log-level the config's log_level would refuse.
func checkLogLevel(level string) error {
	if level == "" || slices.Contains(slices.Concat(logLevels, []string{"warn", "critical"}), strings.ToLower(level)) {
		return nil
	}
	return usageErr("--log-level must be one of %s; got %q", strings.Join(logLevels, ", "), level)
}
