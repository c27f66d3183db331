package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Annotations a leader writes on its Lease beside the election record, so
// that a standby's status page can name the leader's page: the holder they
// were written by, and its status page's URL.
const (
	AnnotationLeader    = "waldur-gitops.io/leader"
	AnnotationLeaderURL = "waldur-gitops.io/leader-status-url"
)

// LeaseLock is the election's lock on a coordination.k8s.io/v1 Lease: the
// election record in the Lease's spec, as client-go's own Lease lock keeps
// it, and the status page's URL (StatusURL) in an annotation while this
// replica holds the Lease. Every replica reads the annotation back when
// the election reads the Lease, so a standby knows where the leader's page
// is without a request of its own.
type LeaseLock struct {
	Namespace, Name string
	Client          coordinationv1.LeasesGetter
	// ID is this replica's identity; StatusURL its status page ("": none
	// advertised).
	ID, StatusURL string

	mu    sync.Mutex
	lease *coordv1.Lease // as last read or written
}

var _ resourcelock.Interface = (*LeaseLock)(nil)

// Get reads the Lease and its election record.
func (l *LeaseLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	lease, err := l.Client.Leases(l.Namespace).Get(ctx, l.Name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	l.keep(lease)
	rec := resourcelock.LeaseSpecToLeaderElectionRecord(&lease.Spec)
	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, nil, fmt.Errorf("lease %s: %w", l.Describe(), err)
	}
	return rec, raw, nil
}

// Create makes the Lease with rec, advertising this replica's page when it
// is the holder.
func (l *LeaseLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	lease := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: l.Name}}
	l.fill(lease, rec)
	got, err := l.Client.Leases(l.Namespace).Create(ctx, lease, metav1.CreateOptions{})
	if err == nil {
		l.keep(got)
	}
	return err
}

// Update writes rec over the Lease last read (its resourceVersion guards
// against a concurrent writer).
func (l *LeaseLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	if l.lease == nil {
		l.mu.Unlock()
		return fmt.Errorf("lease %s: update before the lease was read", l.Describe())
	}
	lease := l.lease.DeepCopy()
	l.mu.Unlock()
	l.fill(lease, rec)
	got, err := l.Client.Leases(l.Namespace).Update(ctx, lease, metav1.UpdateOptions{})
	if err == nil {
		l.keep(got)
	}
	return err
}

// fill puts rec into lease and sets the annotations: this replica's URL
// while it holds the lease, none otherwise (a release clears them).
func (l *LeaseLock) fill(lease *coordv1.Lease, rec resourcelock.LeaderElectionRecord) {
	lease.Spec = resourcelock.LeaderElectionRecordToLeaseSpec(&rec)
	if rec.HolderIdentity != l.ID {
		return // a release or another's record: leave the annotations as read
	}
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	delete(lease.Annotations, AnnotationLeaderURL)
	lease.Annotations[AnnotationLeader] = l.ID
	if l.StatusURL != "" {
		lease.Annotations[AnnotationLeaderURL] = l.StatusURL
	}
}

func (l *LeaseLock) keep(lease *coordv1.Lease) {
	l.mu.Lock()
	l.lease = lease
	l.mu.Unlock()
}

// LeaderURL is the status page the holder of the Lease, as last read,
// advertises: "" when it advertises none, or when the annotation was left
// by an earlier holder.
func (l *LeaseLock) LeaderURL() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lease == nil || l.lease.Spec.HolderIdentity == nil {
		return ""
	}
	if a := l.lease.Annotations; a[AnnotationLeader] == *l.lease.Spec.HolderIdentity {
		return a[AnnotationLeaderURL]
	}
	return ""
}

// RecordEvent records no event: serve logs its changes of role.
func (l *LeaseLock) RecordEvent(string) {}

// Identity is this replica's identity.
func (l *LeaseLock) Identity() string { return l.ID }

// Describe names the Lease as namespace/name.
func (l *LeaseLock) Describe() string { return l.Namespace + "/" + l.Name }
