package waldur_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// set_usage replaces the month's amount per component, dates decide the
// billing month, the list reads the records back by offering and month, and
// Waldur's rules hold: only OK, Updating and Terminating resources, only the
// offering's usage and limit components.
func TestSetUsageAndReadBack(t *testing.T) {
	ctx := context.Background()
	srv := waldurtest.New(t)
	srv.AddOffering(waldur.ProviderOffering{UUID: offering, Components: []waldur.OfferingComponent{
		{Type: "cpu", BillingType: "limit"}, {Type: "cpu_hours", BillingType: "usage", Name: "CPU hours", MeasuredUnit: "core-h"}, {Type: "setup", BillingType: "one"},
	}})
	res := srv.AddResource(waldur.Resource{OfferingUUID: offering, Name: "r1"})
	erred := srv.AddResource(waldur.Resource{OfferingUUID: offering, State: waldur.ResourceErred})
	c := clientFor(t, srv)
	march := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	tallinn := time.FixedZone("EET", 2*3600)
	post := func(r waldur.UUID, date time.Time, items ...waldur.UsageItem) error {
		return c.SetUsage(ctx, waldur.UsageReport{Resource: r, Date: date, Usages: items})
	}
	if err := post(res, march, waldur.UsageItem{Type: "cpu", Amount: "4.00"}, waldur.UsageItem{Type: "cpu_hours", Amount: "1.5", Description: "first"}); err != nil {
		t.Fatal(err)
	}
	if err := post(res, march, waldur.UsageItem{Type: "cpu_hours", Amount: "12.25", Description: "second"}); err != nil {
		t.Fatal(err)
	}
	// Midnight of 1 April in UTC+2 is the April billing month as written.
	if err := post(res, time.Date(2026, 4, 1, 0, 0, 0, 0, tallinn), waldur.UsageItem{Type: "cpu", Amount: "8"}); err != nil {
		t.Fatal(err)
	}
	got, err := c.ListComponentUsages(ctx, waldur.UsageFilter{Offering: offering, BillingPeriod: march})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Type != "cpu" || got[0].Usage != "4.00" || got[1].Type != "cpu_hours" || got[1].Usage != "12.25" ||
		got[1].Description != "second" || got[1].BillingPeriod != "2026-03-01" || got[1].ResourceUUID != res {
		t.Errorf("march records %+v", got)
	}
	if f, _ := got[1].Usage.Float(); f != 12.25 {
		t.Errorf("usage %v", f)
	}
	april, err := c.ListComponentUsages(ctx, waldur.UsageFilter{Resource: res, BillingPeriod: time.Date(2026, 4, 15, 0, 0, 0, 0, time.UTC)})
	if err != nil || len(april) != 1 || april[0].Usage != "8.00" {
		t.Errorf("april records %+v, %v", april, err)
	}
	err = post(erred, march, waldur.UsageItem{Type: "cpu", Amount: "1"})
	if !waldur.HasStatus(err, http.StatusBadRequest) || !strings.Contains(err.Error(), "Resource is not in valid state") {
		t.Errorf("erred resource: %v", err)
	}
	err = post(res, march, waldur.UsageItem{Type: "setup", Amount: "1"}, waldur.UsageItem{Type: "gpu", Amount: "1"})
	if !waldur.HasStatus(err, http.StatusBadRequest) || !strings.Contains(err.Error(), "These components are invalid: gpu, setup.") {
		t.Errorf("invalid components: %v", err)
	}
	if v := srv.Violations(); len(v) > 0 {
		t.Errorf("contract violations: %v", v)
	}
	st := c.Stats()
	if st.Requests[waldur.KindUsageSet] != 5 || st.Requests[waldur.KindUsagesList] != 2 {
		t.Errorf("stats %+v", st.Requests)
	}
}

// The provider offering and users/me are served only on allowed paths.
func TestProviderOfferingAndCurrentUser(t *testing.T) {
	ctx := context.Background()
	srv := waldurtest.New(t, waldurtest.AllowPath("/api/users/me/"), waldurtest.AllowPath("/api/marketplace-provider-offerings/"))
	srv.AddOffering(waldur.ProviderOffering{UUID: offering, Name: "Iris", Type: "Marketplace.Slurm", Components: []waldur.OfferingComponent{{Type: "cpu", BillingType: "limit"}}})
	srv.SetCurrentUser(waldur.User{Username: "svc-gitops"})
	c := clientFor(t, srv)
	u, err := c.CurrentUser(ctx)
	if err != nil || u.Username != "svc-gitops" {
		t.Fatalf("user %+v, %v", u, err)
	}
	o, err := c.GetProviderOffering(ctx, offering)
	if err != nil || o.Name != "Iris" || o.State != "Active" || len(o.Components) != 1 || o.Components[0].BillingType != "limit" {
		t.Fatalf("offering %+v, %v", o, err)
	}
	if _, err := c.GetProviderOffering(ctx, projectA); !waldur.IsNotFound(err) {
		t.Errorf("unknown offering: %v", err)
	}
	bad := newClient(t, srv.URL(), "0000000000000000000000000000000000000000")
	if _, err := bad.CurrentUser(ctx); !waldur.IsAuthError(err) {
		t.Errorf("bad token: %v", err)
	}
}
