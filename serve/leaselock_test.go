package serve

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// TestLeaseLockAdvertises: the holder's lock writes its status page on the
// Lease; another replica's lock reads it back; a release or a new holder
// without a page leaves no link to the former leader.
func TestLeaseLockAdvertises(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset().CoordinationV1()
	a := &LeaseLock{Namespace: "ops", Name: "gitops", Client: client, ID: "pod-a", StatusURL: "http://10.0.0.7:9090/"}
	b := &LeaseLock{Namespace: "ops", Name: "gitops", Client: client, ID: "pod-b"}
	now := metav1.NewTime(time.Now())
	rec := func(holder string) resourcelock.LeaderElectionRecord {
		return resourcelock.LeaderElectionRecord{HolderIdentity: holder, LeaseDurationSeconds: 15, AcquireTime: now, RenewTime: now}
	}
	if _, _, err := a.Get(ctx); err == nil {
		t.Fatal("a Lease before any was made")
	}
	if err := a.Create(ctx, rec("pod-a")); err != nil {
		t.Fatal(err)
	}
	got, raw, err := b.Get(ctx)
	if err != nil || got.HolderIdentity != "pod-a" || len(raw) == 0 {
		t.Fatalf("b reads %+v %q %v", got, raw, err)
	}
	if u := b.LeaderURL(); u != "http://10.0.0.7:9090/" {
		t.Errorf("the standby reads the leader's page as %q", u)
	}
	// a renews: the record changes, and so does its raw text.
	if _, _, err := a.Get(ctx); err != nil {
		t.Fatal(err)
	}
	later := rec("pod-a")
	later.RenewTime = metav1.NewTime(now.Add(2 * time.Second))
	if err := a.Update(ctx, later); err != nil {
		t.Fatal(err)
	}
	if _, raw2, _ := b.Get(ctx); string(raw2) == string(raw) {
		t.Error("a renewal left the raw record unchanged: the election would not see it")
	}
	// a releases: no holder, no link.
	if err := a.Update(ctx, rec("")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(ctx); err != nil || b.LeaderURL() != "" {
		t.Errorf("after a release the link is %q (%v)", b.LeaderURL(), err)
	}
	// b takes the lease without a page of its own: the annotation names b,
	// the link to a is gone.
	if err := b.Update(ctx, rec("pod-b")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Get(ctx); err != nil || a.LeaderURL() != "" {
		t.Errorf("the new leader has no page, yet a reads %q (%v)", a.LeaderURL(), err)
	}
	lease, _ := client.Leases("ops").Get(ctx, "gitops", metav1.GetOptions{})
	if lease.Annotations[AnnotationLeader] != "pod-b" {
		t.Errorf("annotations %v", lease.Annotations)
	}
}
