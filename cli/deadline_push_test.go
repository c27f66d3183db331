package cli

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/waldur/waldur-gitops/internal/testenv/unreachabletest"
)

// TestDeadlinePushesMetrics: a one-shot run cut by its deadline still pushes
// its metrics, with exit code 12, to the Pushgateway (a CronJob's only
// record once the pod is gone).
func TestDeadlinePushesMetrics(t *testing.T) {
	bodies := make(chan []byte, 4)
	pgw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
	}))
	defer pgw.Close()
	silent := unreachabletest.NewSilent(t)
	cfg, _ := deadEndConfig(t, silent.URL())
	writeFile(t, cfg, string(mustRead(t, cfg))+"\nmetrics:\n  pushgateway_url: "+pgw.URL+"\n")
	code, _, stderr := run(t, "sync", "--config", cfg, "--timeout", "1s")
	if code != ExitDeadline {
		t.Fatalf("exit %d, want %d\n%s", code, ExitDeadline, stderr)
	}
	select {
	case b := <-bodies:
		m := parseMetrics(t, bytes.NewReader(b))
		if v := mustValue(t, m, "waldur_gitops_last_run_exit_code", nil); v != ExitDeadline {
			t.Errorf("pushed last_run_exit_code %v, want %d", v, ExitDeadline)
		}
	default:
		t.Fatalf("nothing pushed after the deadline:\n%s", stderr)
	}
}
