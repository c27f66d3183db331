package serve

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/kube"
)

// podNamespaceEnv names the namespace of the Lease when the config does not
// (the downward API's metadata.namespace).
const podNamespaceEnv = "POD_NAMESPACE"

// NewElection builds serve's election on the Lease of le, reaching the API
// server through kubeconfig with the rules every command uses ("": the
// default rules, in a pod its service account), bound to that server's host.
// statusURL is this replica's status page, which it advertises on the
// Lease while it leads ("": none).
func NewElection(ctx context.Context, le config.LeaderElection, kubeconfig, statusURL string, health *Health, rec interface{ SetLeader(bool) }, log *slog.Logger) (*Election, error) {
	src := kube.Source{Path: kubeconfig}
	rc, err := src.RESTConfig()
	if err != nil {
		return nil, failure.Classify(failure.ClassConfig, fmt.Errorf("leader election: %w", err))
	}
	d := le.Durations()
	// One request to the API server may not eat the whole renew deadline.
	rc.Timeout = max(d.RetryPeriod, d.RenewDeadline/2)
	ns := le.Namespace
	if ns == "" {
		ns = os.Getenv(podNamespaceEnv)
	}
	if ns == "" {
		if ns, err = src.Namespace(); err != nil {
			return nil, failure.Classify(failure.ClassConfig, fmt.Errorf("leader election: serve.leader_election.namespace is not set: %w", err))
		}
	}
	client, err := coordinationv1.NewForConfig(rc)
	if err != nil {
		return nil, failure.Classify(failure.ClassConfig, fmt.Errorf("leader election: client of %s: %w", src, err))
	}
	if err := checkLeaseAccess(ctx, rc, ns, le.LeaseName, log); err != nil {
		return nil, err
	}
	// client-go's election logs through klog: into the service's log.
	klog.SetSlogLogger(log.With("component", "leader-election"))
	lock := &LeaseLock{Namespace: ns, Name: le.LeaseName, Client: client, ID: Identity(), StatusURL: statusURL}
	health.Elect(lock.Identity())
	return &Election{Lock: lock, LeaseDuration: d.LeaseDuration, RenewDeadline: d.RenewDeadline, RetryPeriod: d.RetryPeriod,
		Health: health, Metrics: rec, Log: log}, nil
}

// leaseVerbs are what the election does with its Lease.
var leaseVerbs = []string{"get", "create", "update"}

// checkLeaseAccess asks the API server whether this replica may get, create
// and update the Lease: one it may not is a config error at start, not a
// replica standing by for ever. A server that cannot be asked now is
// warned about; the election keeps trying.
func checkLeaseAccess(ctx context.Context, rc *rest.Config, ns, name string, log *slog.Logger) error {
	client, err := authorizationv1.NewForConfig(rc)
	if err != nil {
		return failure.Classify(failure.ClassConfig, fmt.Errorf("leader election: %w", err))
	}
	var denied []string
	for _, verb := range leaseVerbs {
		review := &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
			Namespace: ns, Verb: verb, Group: "coordination.k8s.io", Resource: "leases", Name: name}}}
		got, err := client.SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			log.Warn("leader election: could not ask the API server for access to the Lease; standing by until it answers",
				"lease", ns+"/"+name, "error", err.Error())
			return nil
		}
		if !got.Status.Allowed {
			denied = append(denied, verb)
		}
	}
	if len(denied) > 0 {
		return failure.Errorf(failure.ClassConfig, "leader election: the API server denies %s on the Lease %s/%s (coordination.k8s.io leases): bind a Role granting %s to this replica's account (examples/deploy/overlays/serve-ha/role.yaml)",
			strings.Join(denied, ", "), ns, name, strings.Join(leaseVerbs, ", "))
	}
	return nil
}
