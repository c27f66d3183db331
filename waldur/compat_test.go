package waldur_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// Supports decides by the server's version, asks it once per client, and logs
// one line per skipped feature; a version it cannot read skips the newer
// features without failing.
func TestSupportsByServerVersion(t *testing.T) {
	all := []waldur.Feature{waldur.FeatureAgentIdentity, waldur.FeatureRegisterQueue, waldur.FeatureMembershipSyncStatus,
		waldur.FeatureAgentCompatibility, waldur.FeatureFractionalLimits}
	tests := []struct {
		name     string
		opts     []waldurtest.Option
		fault    int // status answered to /api/version/, 0 for none
		want     []waldur.Feature
		wantLogs int
		wantLog  string
	}{
		{name: "8.0.5", opts: []waldurtest.Option{waldurtest.WithSubset(waldurtest.Subset805)},
			want: []waldur.Feature{waldur.FeatureAgentIdentity}, wantLogs: 4, wantLog: "the server is older than the feature"},
		{name: "8.0.9", opts: []waldurtest.Option{waldurtest.WithVersion("8.0.9")},
			want: []waldur.Feature{waldur.FeatureAgentIdentity}, wantLogs: 4, wantLog: "server_version=8.0.9"},
		{name: "8.1.0", opts: []waldurtest.Option{waldurtest.WithVersion("8.1.0")},
			want:     []waldur.Feature{waldur.FeatureAgentIdentity, waldur.FeatureRegisterQueue, waldur.FeatureMembershipSyncStatus},
			wantLogs: 2, wantLog: "needs=8.1.3"},
		{name: "8.1.2 release candidate", opts: []waldurtest.Option{waldurtest.WithVersion("8.1.2-rc1")},
			want:     []waldur.Feature{waldur.FeatureAgentIdentity, waldur.FeatureRegisterQueue, waldur.FeatureMembershipSyncStatus},
			wantLogs: 2},
		{name: "8.1.3", want: all},
		{name: "9.0", opts: []waldurtest.Option{waldurtest.WithVersion("9.0")}, want: all},
		{name: "not a release", opts: []waldurtest.Option{waldurtest.WithVersion("master")},
			want: []waldur.Feature{waldur.FeatureAgentIdentity}, wantLogs: 4, wantLog: "not a release number"},
		{name: "version forbidden to the token", fault: http.StatusForbidden,
			want: []waldur.Feature{waldur.FeatureAgentIdentity}, wantLogs: 4, wantLog: "cannot be read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := waldurtest.New(t, tt.opts...)
			if tt.fault != 0 {
				srv.InjectFault(waldurtest.Fault{Count: 100, PathPrefix: "/api/version/", Status: tt.fault})
			}
			var logs bytes.Buffer
			c := clientFor(t, srv, func(o *waldur.ClientOptions) {
				o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			})
			ctx := context.Background()
			for range 2 { // the second round is answered from the cache and logs nothing
				var got []waldur.Feature
				for _, f := range all {
					if c.Supports(ctx, f) {
						got = append(got, f)
					}
				}
				if strings.Join(featureNames(got), ",") != strings.Join(featureNames(tt.want), ",") {
					t.Fatalf("supported %v, want %v", got, tt.want)
				}
			}
			lines := strings.Count(logs.String(), "waldur feature skipped")
			if lines != tt.wantLogs || !strings.Contains(logs.String(), tt.wantLog) {
				t.Errorf("%d skip lines, want %d mentioning %q:\n%s", lines, tt.wantLogs, tt.wantLog, logs.String())
			}
			if tt.fault == 0 && srv.Requests("/api/version/") > 1 {
				t.Errorf("version read %d times, want at most once", srv.Requests("/api/version/"))
			}
		})
	}
}

func featureNames(fs []waldur.Feature) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = string(f)
	}
	return out
}

// ServerVersion caches a success and retries after a failure.
func TestServerVersionCache(t *testing.T) {
	ctx := context.Background()
	srv := waldurtest.New(t, waldurtest.WithVersion("8.1.1"))
	c := clientFor(t, srv, func(o *waldur.ClientOptions) { o.RetryMax = 0 })
	srv.InjectFault(waldurtest.Fault{Count: 1, PathPrefix: "/api/version/", Status: http.StatusForbidden})
	if _, err := c.ServerVersion(ctx); !waldur.HasStatus(err, http.StatusForbidden) {
		t.Fatalf("first read: %v, want 403", err)
	}
	for range 3 {
		if v, err := c.ServerVersion(ctx); err != nil || v != "8.1.1" {
			t.Fatalf("ServerVersion() = %q, %v", v, err)
		}
	}
	if n := srv.Requests("/api/version/"); n != 2 {
		t.Errorf("version read %d times, want 2 (the failure and one success)", n)
	}
}

// The client works against a server held to the 8.0.5 contract: the offering
// read (with a plan switch, whose plan is an extension there), the order
// transitions and usage reporting.
func TestClientAgainst805Server(t *testing.T) {
	ctx := context.Background()
	srv := waldurtest.New(t, waldurtest.WithSubset(waldurtest.Subset805),
		waldurtest.AllowPath("/api/marketplace-plans/"), waldurtest.AllowPath("/api/users/me/"),
		waldurtest.AllowPath("/api/marketplace-provider-offerings/"))
	srv.AddOffering(waldur.ProviderOffering{UUID: offering, Name: "Iris", Components: []waldur.OfferingComponent{{Type: "cpu", BillingType: "limit"}}})
	plan := srv.AddPlan(waldur.Plan{Name: "large", Quotas: waldur.Limits{"cpu": "8", "ram": "16"}})
	res := srv.AddResource(waldur.Resource{OfferingUUID: offering, ProjectUUID: projectA, Name: "r1", Limits: waldur.Limits{"cpu": "2"}})
	srv.SetTeam(projectA, []waldur.TeamMember{{Username: "ana", Role: "PROJECT.ADMIN"}})
	create := srv.AddOrder(offering, waldur.Order{Type: waldur.OrderCreate, MarketplaceResourceUUID: srv.AddResource(waldur.Resource{OfferingUUID: offering, ProjectUUID: projectA, State: waldur.ResourceCreating})})
	update := srv.AddOrder(offering, waldur.Order{Type: waldur.OrderUpdate, State: waldur.OrderExecuting, MarketplaceResourceUUID: res, PlanUUID: plan})
	c := clientFor(t, srv)
	st, err := c.ReadOffering(ctx, "iris", offering)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Resources) != 2 || len(st.Orders) != 2 || len(st.Teams[projectA]) != 1 {
		t.Errorf("state: %d resources, %d orders, teams %v", len(st.Resources), len(st.Orders), st.Teams)
	}
	if q := st.PlanQuotas[plan]; q["cpu"] != "8" || q["ram"] != "16" {
		t.Errorf("plan quotas %v", st.PlanQuotas)
	}
	if err := c.ApproveOrder(ctx, create); err != nil {
		t.Fatal(err)
	}
	if err := c.SetOrderDone(ctx, create); err != nil {
		t.Fatal(err)
	}
	if err := c.SetOrderDone(ctx, update); err != nil {
		t.Fatal(err)
	}
	if err := c.SetUsage(ctx, waldur.UsageReport{Resource: res, Date: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
		Usages: []waldur.UsageItem{{Type: "cpu", Amount: "2.5"}}}); err != nil {
		t.Fatal(err)
	}
	if u, err := c.ListComponentUsages(ctx, waldur.UsageFilter{Resource: res, BillingPeriod: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}); err != nil || len(u) != 1 {
		t.Errorf("usages %v, %v", u, err)
	}
	if _, err := c.CurrentUser(ctx); err != nil {
		t.Error(err)
	}
	if o, err := c.GetProviderOffering(ctx, offering); err != nil || o.Name != "Iris" {
		t.Errorf("offering %+v, %v", o, err)
	}
	if v, err := c.ServerVersion(ctx); err != nil || v != "8.0.5" {
		t.Errorf("ServerVersion() = %q, %v", v, err)
	}
	if v := srv.Violations(); len(v) > 0 {
		t.Errorf("contract violations: %v", v)
	}
}

// Plans are read only for open Update orders without limits, once per plan; a
// plan that answers 404 is left out without failing the read.
func TestReadOfferingPlanQuotas(t *testing.T) {
	ctx := context.Background()
	srv := waldurtest.New(t)
	large := srv.AddPlan(waldur.Plan{Name: "large", Quotas: waldur.Limits{"cpu": "8"}})
	unread := srv.AddPlan(waldur.Plan{Name: "with limits", Quotas: waldur.Limits{"cpu": "1"}})
	missing := waldur.UUID("0c1d2e3f405162738495a6b7c8d9e0f1")
	r1 := srv.AddResource(waldur.Resource{OfferingUUID: offering, ProjectUUID: projectA})
	r2 := srv.AddResource(waldur.Resource{OfferingUUID: offering, ProjectUUID: projectA})
	srv.AddOrder(offering, waldur.Order{Type: waldur.OrderUpdate, State: waldur.OrderExecuting, MarketplaceResourceUUID: r1, PlanUUID: large})
	srv.AddOrder(offering, waldur.Order{Type: waldur.OrderUpdate, MarketplaceResourceUUID: r2, PlanUUID: large})
	srv.AddOrder(offering, waldur.Order{Type: waldur.OrderUpdate, State: waldur.OrderExecuting, MarketplaceResourceUUID: r2, PlanUUID: unread, Limits: waldur.Limits{"cpu": "3"}})
	srv.AddOrder(offering, waldur.Order{Type: waldur.OrderUpdate, State: waldur.OrderExecuting, MarketplaceResourceUUID: r2, PlanUUID: missing})
	st, err := clientFor(t, srv).ReadOffering(ctx, "iris", offering)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.PlanQuotas) != 1 || st.PlanQuotas[large]["cpu"] != "8" {
		t.Errorf("plan quotas %v, want only %s", st.PlanQuotas, large)
	}
	if n := srv.Requests("/api/marketplace-plans/"); n != 2 {
		t.Errorf("%d plan reads, want 2 (large once, the missing plan once)", n)
	}

	quiet := waldurtest.New(t)
	quiet.AddResource(waldur.Resource{OfferingUUID: offering, ProjectUUID: projectA})
	if _, err := clientFor(t, quiet).ReadOffering(ctx, "iris", offering); err != nil {
		t.Fatal(err)
	}
	if n := quiet.Requests("/api/marketplace-plans/"); n != 0 {
		t.Errorf("%d plan reads without plan switches, want 0", n)
	}
}
