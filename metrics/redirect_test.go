package metrics_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/redirecttest"
	"github.com/waldur/waldur-gitops/metrics"
)

// TestPushRefusesRedirects: a Pushgateway URL that redirects to another host
// sends neither the password nor the metrics there, and the error names
// metrics.pushgateway_url and both URLs.
func TestPushRefusesRedirects(t *testing.T) {
	const password = "s3cret-pushgateway-password"
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte(password), 0o600); err != nil {
		t.Fatal(err)
	}
	r := metrics.New("v1")
	for _, code := range redirecttest.Codes {
		t.Run(http.StatusText(code), func(t *testing.T) {
			rec := redirecttest.NewRecorder(t)
			from := redirecttest.Redirect(t, code, rec.URL)
			cfg := config.Metrics{PushgatewayURL: from.URL, Job: "waldur-gitops", Username: "pusher", PasswordFile: pwFile, TimeoutSeconds: 5}
			err := metrics.Push(context.Background(), &cfg, "sync", r.Registry())
			redirecttest.AssertRefused(t, err, "metrics.pushgateway_url", from.URL, rec.URL, password)
			rec.AssertUntouched(t)
		})
	}
}
