package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/report"
)

// FromReport is the picture of the config's run report file: the last run
// of sync or serve, with names (whoever reads the file sees them anyway).
func FromReport(cfg *config.Loaded, now time.Time) (Status, error) {
	if cfg.Report == "" {
		return Status{}, errors.New("the config names no run report file (report): set it, or read a running serve with --server")
	}
	b, err := os.ReadFile(cfg.Report)
	if err != nil {
		return Status{}, fmt.Errorf("read the run report %s: %w", cfg.Report, err)
	}
	var rep report.Run
	if err := json.Unmarshal(b, &rep); err != nil {
		return Status{}, fmt.Errorf("the run report %s is not a run report: %w", cfg.Report, err)
	}
	if rep.Schema != report.Schema {
		return Status{}, fmt.Errorf("the run report %s has schema %q, want %q", cfg.Report, rep.Schema, report.Schema)
	}
	rec := Record{Report: &rep, Backends: map[string]string{}, CommitURL: cfg.Serve.CommitURL}
	for _, o := range cfg.Offerings {
		rec.Backends[o.DirName()] = o.BackendType
	}
	return Build([]Record{rec}, Options{Names: true, Now: now, Source: cfg.Report}), nil
}

// FetchTimeout bounds the request of Fetch.
const FetchTimeout = 30 * time.Second

// Fetch reads the picture from a running serve's /status.json at server
// (its --listen address as a URL), with the bearer token when one is given.
func Fetch(ctx context.Context, client *http.Client, server string, token config.Secret) (Status, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Status{}, fmt.Errorf("--server %q: want an http or https URL such as http://waldur-gitops.sync.svc:9090", server)
	}
	u = u.JoinPath("status.json")
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Status{}, fmt.Errorf("status from %s: %w", u.Redacted(), err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token.Reveal())
	}
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return Status{}, fmt.Errorf("status from %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return Status{}, fmt.Errorf("status from %s: %s: %s", u.Redacted(), resp.Status, strings.TrimSpace(string(body)))
	}
	var s Status
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return Status{}, fmt.Errorf("status from %s: not a status answer: %w", u.Redacted(), err)
	}
	if s.Schema != Schema {
		return Status{}, fmt.Errorf("status from %s: schema %q, want %q (a serve of another version?)", u.Redacted(), s.Schema, Schema)
	}
	return s, nil
}

// ReadToken reads a bearer token from file ("" for none).
func ReadToken(file string) (config.Secret, error) {
	if file == "" {
		return "", nil
	}
	s := config.Serve{StatusTokenFile: file}
	return s.StatusToken()
}

// Request is what the status command asks for: a running serve's picture
// (Server, with the token of TokenFile) or the run report's (Load reads
// the config that names it).
type Request struct {
	Server, TokenFile string
	Load              func() (*config.Loaded, error)
}

// Get is the picture req asks for. A config that does not load keeps
// Load's error; a report that cannot be read is failure.ClassOutput, a serve
// that cannot be asked failure.ClassConfig.
func Get(ctx context.Context, req Request) (Status, error) {
	if req.Server == "" {
		cfg, err := req.Load()
		if err != nil {
			return Status{}, err
		}
		s, err := FromReport(cfg, time.Now())
		return s, failure.Classify(failure.ClassOutput, err)
	}
	tok, err := ReadToken(req.TokenFile)
	if err == nil {
		var s Status
		s, err = Fetch(ctx, nil, req.Server, tok)
		if err == nil {
			return s, nil
		}
	}
	return Status{}, failure.Classify(failure.ClassConfig, err)
}
