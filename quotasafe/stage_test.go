package quotasafe_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/quotasafe"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

const offeringUUID = "0ff00000000040008000000000000042"

// fakeQuotas serves one namespace's quotas.
type fakeQuotas map[string][]kube.Quota

func (f fakeQuotas) Quotas(_ context.Context, ns string) ([]kube.Quota, error) { return f[ns], nil }

// The quota stage per policy and cluster access, on a namespace-profile
// tenant whose Update order cuts storage from 10Gi to 4Gi while 6Gi are used.
func TestQuotaStagePolicies(t *testing.T) {
	live := fakeQuotas{"waldur-alpha": {{Namespace: "waldur-alpha", Name: "waldur-quota",
		Hard: map[string]resource.Quantity{"requests.storage": resource.MustParse("10Gi")},
		Used: map[string]resource.Quantity{"requests.storage": resource.MustParse("6Gi")}}}}
	const res, ord = waldur.UUID("a0000000000040008000000000000001"), waldur.UUID("d0000000000040008000000000000001")
	for _, tc := range []struct {
		name, policy string
		newStorage   string
		paused       bool
		openErr      error
		canReview    bool
		wantAction   changeset.Action // "" for no entry
		wantReason   string
		wantHold     bool
	}{
		{name: "hold", policy: "hold", newStorage: "4", wantAction: changeset.Skip, wantReason: "held: waiting for usage to drop below the new quota (quota_shrink: hold): requests.storage used 6Gi, new 4Gi, in place 10Gi", wantHold: true},
		{name: "hold, usage fits", policy: "hold", newStorage: "6"},
		{name: "allow", policy: "allow", newStorage: "4", wantAction: changeset.Update, wantReason: "cut below usage, made (quota_shrink: allow): requests.storage used 6Gi"},
		{name: "review", policy: "review", newStorage: "4", canReview: true, wantAction: changeset.Skip, wantReason: "sent for review: quota cut below usage (quota_shrink: review): requests.storage used 6Gi"},
		{name: "review outside Git holds", policy: "review", newStorage: "4", wantAction: changeset.Skip, wantReason: "held: waiting for usage", wantHold: true},
		{name: "paused resources are never held", policy: "hold", newStorage: "4", paused: true},
		{name: "no cluster, a cut", policy: "hold", newStorage: "4", openErr: errors.New("no kubeconfig"), wantAction: changeset.Skip, wantReason: "the quota cut is not checked against usage and is made: cannot read the cluster"},
		{name: "no cluster, a raise", policy: "hold", newStorage: "20", openErr: errors.New("no kubeconfig")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := config.Parse([]byte(`offerings:
- name: Plain
  waldur_api_url: https://waldur.example/api/
  waldur_api_token: x
  waldur_offering_uuid: `+offeringUUID+`
  backend_type: namespace
  quota_shrink: `+tc.policy+`
  backend_components:
    storage: {accounting_type: limit}
`), filepath.Join(t.TempDir(), "config.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			r := waldur.Resource{UUID: res, Slug: "alpha", CustomerSlug: "c", ProjectSlug: "p", State: waldur.ResourceOK, Limits: waldur.Limits{"storage": "10"}, Paused: waldur.Flag(tc.paused)}
			st := &waldur.State{Offerings: []waldur.OfferingState{{Name: "Plain", OfferingUUID: offeringUUID, Resources: []waldur.Resource{r},
				Orders: []waldur.Order{{UUID: ord, Type: waldur.OrderUpdate, State: waldur.OrderExecuting, MarketplaceResourceUUID: res, Limits: waldur.Limits{"storage": waldur.Amount(tc.newStorage)}}}}}}
			tpls, err := render.LoadTemplates(l.Config)
			if err != nil {
				t.Fatal(err)
			}
			result, err := render.New(l.Config, tpls).Render(st)
			if err != nil {
				t.Fatal(err)
			}
			stage := &quotasafe.Stage{Offerings: l.Offerings, CanReview: tc.canReview, Open: func(kube.Source) (quotasafe.Reader, error) { return live, tc.openErr }}
			out, err := stage.Check(context.Background(), st, result)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantAction == "" {
				if len(out.Changes.Entries) != 0 || len(out.Holds) != 0 {
					t.Errorf("entries %v holds %v, want none", out.Changes.Entries, out.Holds)
				}
				return
			}
			if len(out.Changes.Entries) != 1 {
				t.Fatalf("entries %v", out.Changes.Entries)
			}
			e := out.Changes.Entries[0]
			if e.Stage != "quota" || e.Kind != quotasafe.EntryKind || e.Subject != "plain/waldur-alpha" || e.Action != tc.wantAction || !strings.HasPrefix(e.Reason, tc.wantReason) || e.Resource != string(res) {
				t.Errorf("entry %+v", e)
			}
			if _, ok := out.Review[res]; ok != (tc.policy == "review" && tc.canReview) {
				t.Errorf("review %v", out.Review)
			}
			if h, ok := out.Holds[res]; ok != tc.wantHold || (ok && h.Keep["requests.storage"] != "10Gi") {
				t.Errorf("holds %v", out.Holds)
			}
		})
	}
}
