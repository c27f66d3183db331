package publish

import (
	"context"
	"errors"
	"fmt"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/keycloak"
)

// KeycloakStateName is the state ref (gitsync.StateRef) the Keycloak memory
// is kept in by a run that publishes to Git.
const KeycloakStateName = "keycloak"

// gitState keeps the Keycloak memory in a state ref of the GitOps repository,
// replaced compare-and-swap from the commit last read.
type gitState struct {
	p      *Git
	commit string
}

// String names the ref in messages.
func (s *gitState) String() string {
	return "keycloak state ref " + gitsync.StateRef(KeycloakStateName)
}

// Load reads the state ref, or takes it from the run's look at the branch
// when that read it.
func (s *gitState) Load(ctx context.Context) ([]byte, error) {
	if err := s.p.open(); err != nil {
		return nil, err
	}
	if st, ok := s.p.prefetched(KeycloakStateName); ok {
		s.commit = st.Commit
		return st.Data, nil
	}
	st, err := s.p.repo.ReadState(ctx, KeycloakStateName)
	if err != nil {
		return nil, err
	}
	s.commit = st.Commit
	return st.Data, nil
}

// Save replaces the state ref. When another writer moved it since it was
// read, the later write wins: this pass's memory is as good as that one.
func (s *gitState) Save(ctx context.Context, data []byte) error {
	if err := s.p.open(); err != nil {
		return err
	}
	c, err := s.p.repo.WriteState(ctx, KeycloakStateName, data, s.commit)
	if errors.Is(err, gitsync.ErrRaced) {
		st, rerr := s.p.repo.ReadState(ctx, KeycloakStateName)
		if rerr != nil {
			return fmt.Errorf("%w (and re-reading it: %w)", err, rerr)
		}
		c, err = s.p.repo.WriteState(ctx, KeycloakStateName, data, st.Commit)
	}
	if err != nil {
		return err
	}
	s.commit = c
	return nil
}

// readOnly is a store a dry run reads and never writes.
type readOnly struct{ keycloak.Store }

// Save writes nothing.
func (readOnly) Save(context.Context, []byte) error { return nil }

// KeycloakMemory is the Keycloak stage's memory for runs that publish with p
// (a *Git, a *Cluster, nil for the keycloak verb, or anything else): kept
// in the file keycloak_state names; without one, where the run already
// writes — the state ref KeycloakStateName of the GitOps repository (Git,
// and the keycloak verb when git.url is set), ConfigMaps in the namespace
// keycloak_state_namespace names (Cluster) — and otherwise in this process
// only. nil when keycloak_state is "off": every pass reads every
// group. A dry run's memory reads its store and never writes it.
func KeycloakMemory(cfg *config.Config, p any, dryRun bool) *keycloak.Memory {
	var s keycloak.Store
	switch pub := p.(type) {
	case nil:
		// The keycloak verb publishes nothing: a config with a GitOps
		// repository keeps the memory where sync keeps it, shared with it.
		if cfg.Git.URL != "" {
			s = &gitState{p: &Git{Config: cfg}}
		}
	case *Git:
		s = &gitState{p: pub}
	case *Cluster:
		s = &ConfigMapStore{Kubeconfig: pub.Options.Kubeconfig, Namespace: cfg.KeycloakStateNamespace}
	}
	switch {
	case cfg.KeycloakState == config.KeycloakStateOff:
		return nil
	case cfg.KeycloakState != "":
		s = keycloak.FileStore{Path: cfg.KeycloakState}
	}
	if gs, ok := s.(*gitState); ok {
		gs.p.readAlso(KeycloakStateName) // with the no-op record, in one look
	}
	if s != nil && dryRun {
		s = readOnly{s}
	}
	return keycloak.NewStoredMemory(s)
}
