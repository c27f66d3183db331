package writeback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/waldur"
)

// AgentName is the prefix of the site-agent identity the tool registers per
// offering: the identity is named AgentName + "-" + the offering's config
// name, stable across restarts, hosts and replicas of one deployment (a host
// name would make a new identity at every pod restart).
const AgentName = "waldur-gitops"

// AgentProcessorName is the name of the processor registered under every
// service; its backend_type is the offering's backend_type.
const AgentProcessorName = "waldur-gitops"

// agentModes are the commands that register a service of their name; the
// others (render, keycloak) announce nothing.
var agentModes = []string{"sync", "apply", "serve", "report"}

// agentDependencies are the modules reported as the identity's
// dependencies, when the binary carries their versions.
var agentDependencies = []string{
	"github.com/Nerzal/gocloak/v13",
	"github.com/go-git/go-git/v5",
	"k8s.io/client-go",
}

// AgentAnnouncer registers the tool with Waldur as the site agent of every
// offering: an identity (name, version, dependencies), one service per mode
// the tool runs in, and a processor naming the offering's backend type. It
// creates what is missing and updates the identity when its version or
// dependencies changed; a run that finds everything in place writes nothing
// but the idempotent register_service call. It never fails a run: what it
// cannot do is a skip entry and a warning.
type AgentAnnouncer struct {
	Source    Clients
	Offerings []config.Offering
	Log       *slog.Logger
}

// Announce is the agent stage (the engine's Announcer seam). It registers for the offerings st holds,
// those read and found in Waldur; with st nil (a command that reads no
// state first) it reads each offering itself and registers for those found.
// An offering not read or not found gets no identity.
func (a *AgentAnnouncer) Announce(ctx context.Context, st *waldur.State, mode string, dryRun bool) (changeset.Result, error) {
	var cs changeset.Set
	if !slices.Contains(agentModes, mode) {
		return changeset.Result{Changes: cs}, nil
	}
	ctx, tally := waldur.WithTally(ctx)
	for i := range a.Offerings {
		o := &a.Offerings[i]
		if !a.found(ctx, st, o, &cs) {
			continue
		}
		entries, err := a.announce(ctx, o, mode, dryRun)
		cs.Add(entries...)
		if err != nil {
			a.log().Warn("registering the site agent identity failed", "offering", o.Name, "error", err.Error())
			cs.Add(changeset.Entry{Stage: "agent", Kind: "AgentIdentity", Subject: AgentIdentityName(o), Action: changeset.Skip,
				Offering: o.Name, Reason: err.Error(), Cause: changeset.CauseAgentFailed})
		}
	}
	return changeset.Result{Changes: cs, Calls: tally.Stats().Requests}, nil
}

// found reports whether o was read into st or, with st nil, exists in
// Waldur. An offering that was not is noted as a skip, so that the run
// report says why it has no identity.
func (a *AgentAnnouncer) found(ctx context.Context, st *waldur.State, o *config.Offering, cs *changeset.Set) bool {
	var why error
	switch {
	case st != nil && slices.ContainsFunc(st.Offerings, func(r waldur.OfferingState) bool { return r.Name == o.Name }):
		return true
	case st != nil:
		why = errors.New("the offering was not read")
	default:
		c, err := a.Source.Client(o)
		if err == nil {
			err = c.CheckOffering(ctx, waldur.UUID(o.WaldurOfferingUUID))
		}
		if err == nil {
			return true
		}
		why = err
	}
	cs.Add(a.skip(o, AgentIdentityName(o), "not registered: "+why.Error(), changeset.CauseAgentFailed))
	return false
}

// AgentIdentityName is the identity name of an offering.
func AgentIdentityName(o *config.Offering) string { return AgentName + "-" + o.Name }

// AgentDependencies are the dependencies the identity reports: the Go
// runtime and the modules of agentDependencies, sorted by package.
func AgentDependencies() []waldur.AgentDependency {
	deps := []waldur.AgentDependency{{Package: "go", Version: runtime.Version()}}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Replace != nil {
				m = m.Replace
			}
			if slices.Contains(agentDependencies, m.Path) {
				deps = append(deps, waldur.AgentDependency{Package: m.Path, Version: m.Version})
			}
		}
	}
	slices.SortFunc(deps, func(a, b waldur.AgentDependency) int { return strings.Compare(a.Package, b.Package) })
	return deps
}

func (a *AgentAnnouncer) announce(ctx context.Context, o *config.Offering, mode string, dryRun bool) ([]changeset.Entry, error) {
	c, err := a.Source.Client(o)
	if err != nil {
		return nil, err
	}
	if !c.Supports(ctx, waldur.FeatureAgentIdentity) {
		return []changeset.Entry{a.skip(o, AgentIdentityName(o),
			"the Waldur server is older than site-agent identities", changeset.CauseAgentIncompatible)}, nil
	}
	name := AgentIdentityName(o)
	want := waldur.AgentIdentityRequest{Offering: waldur.UUID(o.WaldurOfferingUUID), Name: name,
		Version: version.Version, Dependencies: AgentDependencies()}
	proc := waldur.AgentProcessor{Name: AgentProcessorName, BackendType: o.BackendType, BackendVersion: version.Version}
	have, err := c.FindAgentIdentity(ctx, want.Offering, name)
	if err != nil {
		return nil, err
	}
	var out []changeset.Entry
	svcSubject := name + "/" + mode
	procSubject := svcSubject + "/" + AgentProcessorName
	switch {
	case have == nil && dryRun:
		return []changeset.Entry{
			a.entry(o, "AgentIdentity", name, changeset.Create, ""),
			a.entry(o, "AgentService", svcSubject, changeset.Create, ""),
			a.entry(o, "AgentProcessor", procSubject, changeset.Create, ""),
		}, nil
	case have == nil:
		if have, err = c.CreateAgentIdentity(ctx, want); err != nil {
			return nil, err
		}
		out = append(out, a.entry(o, "AgentIdentity", name, changeset.Create, ""))
	case have.Version != want.Version || !sameDependencies(have.Dependencies, want.Dependencies):
		out = append(out, a.entry(o, "AgentIdentity", name, changeset.Update, ""))
		if !dryRun {
			if have, err = c.UpdateAgentIdentity(ctx, have.UUID, want); err != nil {
				return nil, err
			}
		}
	}
	out = append(out, a.compatibility(ctx, c, o, have)...)
	if dryRun {
		if !slices.ContainsFunc(have.Services, func(s waldur.AgentServiceRef) bool { return s.Name == mode }) {
			out = append(out, a.entry(o, "AgentService", svcSubject, changeset.Create, ""),
				a.entry(o, "AgentProcessor", procSubject, changeset.Create, ""))
		}
		return out, nil
	}
	svc, err := c.RegisterAgentService(ctx, have.UUID, mode, mode)
	if err != nil {
		return out, err
	}
	if svc.Created {
		out = append(out, a.entry(o, "AgentService", svcSubject, changeset.Create, ""))
	}
	i := slices.IndexFunc(svc.Processors, func(p waldur.AgentProcessor) bool { return p.Name == proc.Name })
	if i >= 0 && svc.Processors[i].BackendType == proc.BackendType && svc.Processors[i].BackendVersion == proc.BackendVersion {
		return out, nil
	}
	if _, err := c.RegisterAgentProcessor(ctx, svc.UUID, proc); err != nil {
		return out, err
	}
	action := changeset.Create
	if i >= 0 {
		action = changeset.Update
	}
	return append(out, a.entry(o, "AgentProcessor", procSubject, action, "")), nil
}

// compatibility reads Waldur's verdict on the identity (8.1.3 and later): an
// incompatible one is a warning and a skip entry.
func (a *AgentAnnouncer) compatibility(ctx context.Context, c *waldur.Client, o *config.Offering, id *waldur.AgentIdentity) []changeset.Entry {
	if !c.Supports(ctx, waldur.FeatureAgentCompatibility) {
		return nil
	}
	if id.Compatibility == nil || id.Compatibility.Status != waldur.AgentIncompatible {
		return nil
	}
	reason := "waldur says this version is incompatible"
	if m := strings.TrimSpace(id.Compatibility.Message); m != "" {
		reason += ": " + m
	}
	if id.Compatibility.MinimumRequired != "" {
		reason += fmt.Sprintf(" (minimum required %s)", id.Compatibility.MinimumRequired)
	}
	a.log().Warn("waldur says the site agent version is incompatible", "offering", o.Name, "version", version.Version,
		"message", id.Compatibility.Message, "minimum_required", id.Compatibility.MinimumRequired)
	return []changeset.Entry{a.skip(o, id.Name, reason, changeset.CauseAgentIncompatible)}
}

func (a *AgentAnnouncer) entry(o *config.Offering, kind, subject string, action changeset.Action, reason string) changeset.Entry {
	return changeset.Entry{Stage: "agent", Kind: kind, Subject: subject, Action: action, Offering: o.Name, Reason: reason}
}

// sameDependencies compares two dependency lists in any order.
func sameDependencies(a, b []waldur.AgentDependency) bool {
	sorted := func(d []waldur.AgentDependency) []waldur.AgentDependency {
		d = slices.Clone(d)
		slices.SortFunc(d, func(x, y waldur.AgentDependency) int {
			return strings.Compare(x.Package+" "+x.Version, y.Package+" "+y.Version)
		})
		return d
	}
	return slices.Equal(sorted(a), sorted(b))
}

// skip is a skipped AgentIdentity entry with its cause.
func (a *AgentAnnouncer) skip(o *config.Offering, subject, reason string, c changeset.Cause) changeset.Entry {
	e := a.entry(o, "AgentIdentity", subject, changeset.Skip, reason)
	e.Cause = c
	return e
}

// Clients opens the Waldur client of an offering (source.API, whose
// clients the run shares).
type Clients interface {
	Client(o *config.Offering) (*waldur.Client, error)
}

func (a *AgentAnnouncer) log() *slog.Logger { return logOrDiscard(a.Log) }

// logOrDiscard is l, or a logger that drops everything.
func logOrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
