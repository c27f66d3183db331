package serve

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/metrics"
	"github.com/waldur/waldur-gitops/status"
)

// TestStatusPageBesideHealth: the service keeps each run for the status
// page (a run whose config did not load too), and the page's paths share
// the port with /healthz and /metrics without shadowing them.
func TestStatusPageBesideHealth(t *testing.T) {
	rec := metrics.New("test")
	svc := &Service{Metrics: rec, Interval: time.Minute, Load: func() (*config.Loaded, error) {
		return nil, errors.New("config gone")
	}}
	svc.Leadership = func() status.Leadership {
		return status.Leadership{Elected: true, Identity: "pod-b", LeaderIdentity: "pod-a", LeaderURL: "http://10.0.0.7:9090/"}
	}
	health := NewHealth(time.Now(), time.Hour, nil)
	cfg := &config.Loaded{Config: &config.Config{}}
	h := svc.WithStatusPage(Handler(health, rec.Registry()), health, cfg)
	health.End(svc.Run(t.Context()))
	if recs := svc.Runs.Records(); len(recs) != 1 || recs[0].ID != 1 || recs[0].Report.ExitCode != 2 {
		t.Fatalf("runs kept: %+v", recs)
	}
	for _, tc := range []struct {
		path, contentType, want string
		code                    int
	}{
		{"/", "text/html; charset=utf-8", `the leader is pod-a at http://10.0.0.7:9090/ — <a href="http://10.0.0.7:9090/">`, 200},
		{"/runs/1", "text/html; charset=utf-8", "Run 1", 200},
		{"/status.json", "application/json", `"health": "failing"`, 200},
		{"/healthz", "application/json", `"status": "failing"`, 503},
		{"/metrics", "text/plain", "waldur_gitops_interval_seconds 60", 200},
		{"/nothing", "", "", 404},
	} {
		t.Run(tc.path, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, tc.path, nil))
			body, _ := io.ReadAll(w.Result().Body)
			if w.Code != tc.code || !strings.HasPrefix(w.Header().Get("Content-Type"), tc.contentType) || !strings.Contains(string(body), tc.want) {
				t.Errorf("%s: %d %q, want %d %q with %q:\n%s", tc.path, w.Code, w.Header().Get("Content-Type"), tc.code, tc.contentType, tc.want, body)
			}
		})
	}
}
