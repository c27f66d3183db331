package offboard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestAwaitCluster: the proof reads the cluster again while a removal is
// pending only because the cluster still names the user, until it is
// proved, the offering's order_done_timeout_seconds has passed or the
// context ends; before each round it drops the objects that still named a
// waiting user and keeps the others.
func TestAwaitCluster(t *testing.T) {
	named := proof{pending: "the cluster's RoleBinding t1/x still names the user", atCluster: true}
	for _, tt := range []struct {
		name       string
		first      proof
		cleanAfter int // rounds after which again proves the user; 0: never
		sleepErr   error
		wantRounds int
		wantProved bool
	}{
		{"applied during the wait", named, 2, nil, 2, true},
		{"never applied: the timeout ends it", named, 0, nil, 3, false},
		{"proved at once: no wait", proof{}, 0, nil, 0, true},
		{"the cluster unreadable: no wait", proof{pending: "the cluster could not be read: x"}, 0, nil, 0, false},
		{"the run stopped", named, 1, context.Canceled, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
			var slept []time.Duration
			w := &Workflow{Now: func() time.Time { return now }, PollInterval: time.Second, Sleep: func(_ context.Context, d time.Duration) error {
				if tt.sleepErr != nil {
					return tt.sleepErr
				}
				slept = append(slept, d)
				now = now.Add(d)
				return nil
			}}
			o := &testConfig().Offerings[0]
			timeout := 3
			o.OrderDoneTimeoutSeconds = &timeout
			x := &user{o: o, u: &waldur.OfferingUser{UUID: "b1", Username: "bob"}}
			seen := map[string][]byte{
				"a": []byte("subjects:\n- kind: User\n  name: oidc:bob\n"),
				"b": []byte("subjects:\n- kind: User\n  name: oidc:ann\n"),
				"c": nil,
			}
			rounds := 0
			proofs := map[*user]proof{x: tt.first}
			w.awaitCluster(context.Background(), proofs, func(*user) proof {
				rounds++
				if _, ok := seen["a"]; ok {
					t.Error("the object that named bob was not dropped before the round")
				}
				seen["a"] = []byte("name: oidc:bob\n") // read again, still naming him
				if tt.cleanAfter > 0 && rounds >= tt.cleanAfter {
					return proof{}
				}
				return named
			}, seen)
			p := proofs[x]
			if rounds != tt.wantRounds || (p.pending == "") != tt.wantProved {
				t.Errorf("%d rounds, proof %+v; want %d rounds, proved %t", rounds, p, tt.wantRounds, tt.wantProved)
			}
			if !slices.Equal(slept, slices.Repeat([]time.Duration{time.Second}, len(slept))) || len(slept) != rounds {
				t.Errorf("slept %v over %d rounds, want 1s before each", slept, rounds)
			}
			if _, ok := seen["b"]; !ok {
				t.Error("the object that does not name bob was dropped")
			}
		})
	}
}

// listingCluster is a fakeCluster that can list a kind (Lister).
type listingCluster struct {
	fakeCluster
	lists   int
	listErr error
}

func (l *listingCluster) List(_ context.Context, _ *config.Offering, _, _, kind string) (map[string][]byte, error) {
	l.lists++
	if l.listErr != nil {
		return nil, l.listErr
	}
	out := map[string][]byte{}
	for k, v := range l.objects {
		if name, ok := strings.CutPrefix(k, kind+" "); ok {
			out[name] = []byte(v)
		}
	}
	return out, nil
}

// TestAtClusterLists: with many objects of a kind to read, the proof lists
// the kind once instead of getting each; with few, or when the list fails,
// it gets them one by one; the verdict is the same either way.
func TestAtClusterLists(t *testing.T) {
	o := &testConfig().Offerings[0]
	x := &user{o: o, u: &waldur.OfferingUser{UUID: "b1", Username: "bob"}}
	rb := func(ns string, bob bool) string {
		s := "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: edit\n  namespace: " + ns + "\nsubjects:\n- kind: User\n  name: oidc:ann\n"
		if bob {
			s += "- kind: User\n  name: oidc:bob\n"
		}
		return s
	}
	for _, tt := range []struct {
		name                string
		tenants             int
		listErr             error
		wantLists, wantGets int
	}{
		{"many: one list", 20, nil, 1, 0},
		{"few: one get each", 3, nil, 0, 3},
		{"the list fails: one get each", 20, errors.New("forbidden"), 1, 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pub := &Published{Before: render.Tree{}, After: render.Tree{}}
			objects := map[string]string{}
			for i := range tt.tenants {
				ns := fmt.Sprintf("t%02d", i)
				pub.After["ns/cluster/"+ns+"/rolebinding-edit.yaml"] = []byte(rb(ns, false))
				objects["RoleBinding "+ns+"/edit"] = rb(ns, i == tt.tenants-1) // the consumer lags in the last
			}
			c := &listingCluster{fakeCluster: fakeCluster{objects: objects}, listErr: tt.listErr}
			got, err := atCluster(context.Background(), c, x, pub, map[string][]byte{})
			want := fmt.Sprintf("the cluster's RoleBinding t%02d/edit still names the user", tt.tenants-1)
			if err != nil || !strings.HasPrefix(got, want) {
				t.Errorf("atCluster() = %q, %v, want %q", got, err, want)
			}
			if c.lists != tt.wantLists || c.gets != tt.wantGets {
				t.Errorf("%d lists, %d gets; want %d, %d", c.lists, c.gets, tt.wantLists, tt.wantGets)
			}
		})
	}
}
