package usage

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/waldur"
)

// Setup says where the usage report of a config reads and writes.
type Setup struct {
	// Snapshot is the snapshot file of a dry run (its offerings stand in
	// for Waldur); "": the API, through Client.
	Snapshot string
	// Kubeconfig is the cluster of every offering (--kubeconfig); "": each
	// offering's kubeconfig_path and kubeconfig_context.
	Kubeconfig string
	// Client is an offering's Waldur client.
	Client func(*config.Offering) (Waldur, error)
	// OpenCluster opens the cluster measured usage and tenants are read from.
	OpenCluster func(kube.Source) (Cluster, error)
	DryRun      bool
	Now         func() time.Time
	Log         *slog.Logger
}

// NewReporter builds the reporter of cfg: every offering with its Waldur
// and, when a component is measured or a kubeconfig is named, its cluster.
// Every error is the config's (or the flags'): nothing was read.
func NewReporter(cfg *config.Config, s Setup) (*Reporter, error) {
	var snap *waldur.Snapshot
	var err error
	if s.Snapshot != "" {
		if snap, err = waldur.LoadSnapshot(s.Snapshot); err != nil {
			return nil, fmt.Errorf("--snapshot: %w", err)
		}
	}
	loc, err := time.LoadLocation(cfg.Timezone)
	if err != nil {
		return nil, fmt.Errorf("timezone: %w", err)
	}
	rp := &Reporter{Config: cfg, Location: loc, DryRun: s.DryRun, Now: s.Now, Log: s.Log}
	for i := range cfg.Offerings {
		uo, err := s.offering(&cfg.Offerings[i], snap)
		if err != nil {
			return nil, err
		}
		rp.Offerings = append(rp.Offerings, uo)
	}
	return rp, nil
}

// offering is one offering of the usage report: its Waldur (the API, or
// the snapshot of a dry run) and the cluster its measured components and
// tenants are read from, when there is one.
func (s Setup) offering(o *config.Offering, snap *waldur.Snapshot) (*Offering, error) {
	uo := &Offering{Config: o}
	var err error
	if snap != nil {
		uo.Waldur, err = FromSnapshot(snap, s.Snapshot, o.Name)
	} else {
		uo.Waldur, err = s.Client(o)
	}
	if err != nil {
		return nil, err
	}
	src := kube.Source{Path: s.Kubeconfig}
	if src.Path == "" {
		cs := o.Settings.Common()
		src = kube.Source{Path: cs.KubeconfigPath, Context: cs.KubeconfigContext}
	}
	// Measured components need the cluster; with one named, it also
	// shows which tenants exist, and only those are billed.
	if !measured(o) && src.Path == "" {
		return uo, nil
	}
	cl, err := s.OpenCluster(src)
	switch {
	case err != nil && src.Path == "":
		// Nothing names a cluster and client-go finds none: report
		// the allocations only.
		if s.Log != nil {
			s.Log.Warn("measured components are not reported: no kubeconfig", "offering", o.Name, "error", err)
		}
	case err != nil && measured(o):
		return nil, fmt.Errorf("offering %s: measured components need a cluster: %w", o.Name, err)
	case err != nil:
		return nil, fmt.Errorf("offering %s: the usage report checks tenants in the cluster the kubeconfig names, and cannot open it: %w", o.Name, err)
	default:
		uo.Cluster = cl
	}
	return uo, nil
}

// Classify gives the report's errors their failure classes: a Waldur read
// (*ReadError) ClassWaldur, a cluster read (*ClusterError) ClassCluster,
// templates that do not render (*RenderError) ClassConfig, posts that
// failed ClassPartial.
func Classify(err error) error {
	var re *ReadError
	var ce *ClusterError
	var rde *RenderError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re):
		return failure.Classify(failure.ClassWaldur, err)
	case errors.As(err, &ce):
		return failure.Classify(failure.ClassCluster, err)
	case errors.As(err, &rde):
		return failure.Classify(failure.ClassConfig, err)
	}
	return failure.Classify(failure.ClassPartial, err)
}
