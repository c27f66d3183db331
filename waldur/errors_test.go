package waldur_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/waldur/waldur-gitops/internal/testenv/redirecttest"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

const secretToken = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"

func TestUnauthorizedIsClearAndHidesTheToken(t *testing.T) {
	srv := waldurtest.New(t)
	c := newClient(t, srv.URL(), secretToken)
	_, err := c.ListResources(context.Background(), offering)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{
		"list resources of offering " + string(offering),
		"waldur GET " + srv.URL() + "/api/marketplace-provider-resources/?",
		"401 Unauthorized: Invalid token.",
		"authentication failed: check waldur_api_token",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	if strings.Contains(msg, secretToken) || strings.Contains(msg, "field=") {
		t.Errorf("error carries the token or the field list: %q", msg)
	}
	var ae *waldur.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 401 || ae.Detail != "Invalid token." || ae.Method != "GET" {
		t.Errorf("APIError %+v", ae)
	}
	if !waldur.IsAuthError(err) || waldur.IsNotFound(err) {
		t.Error("IsAuthError/IsNotFound disagree with the status")
	}
	if n := srv.Requests("/api/"); n != 1 {
		t.Errorf("401 was retried: %d requests", n)
	}
}

func TestForbiddenNamesTheRole(t *testing.T) {
	srv := waldurtest.New(t)
	srv.FailNext(1, 403)
	_, err := clientFor(t, srv).ListOrders(context.Background(), offering)
	if err == nil || !strings.Contains(err.Error(), "OFFERING.MANAGER") || !waldur.IsAuthError(err) {
		t.Fatalf("error %v", err)
	}
}

// TestTokenNeverLoggedOrReturned drives success, retries, 4xx, 5xx and transport
// errors with debug logging on, then searches logs and errors for the token.
func TestTokenNeverLoggedOrReturned(t *testing.T) {
	srv := waldurtest.New(t, waldurtest.WithToken(secretToken))
	srv.AddResource(waldur.Resource{OfferingUUID: offering, ProjectUUID: projectA})
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := clientFor(t, srv, func(o *waldur.ClientOptions) { o.Logger, o.RetryMax = logger, 1 })
	ctx := context.Background()
	var errs []error
	srv.FailNext(1, 500)
	_, err := c.ReadOffering(ctx, "iris", offering)
	errs = append(errs, err)
	srv.FailNext(2, 503)
	errs = append(errs, c.ApproveOrder(ctx, offering))
	// net/http replays a request whose reused connection closes before an
	// answer, once per idle connection: enough drops for every one of them.
	srv.InjectFault(waldurtest.Fault{Count: 40, Drop: true})
	_, err = c.Version(ctx)
	errs = append(errs, err)
	srv.ClearFaults()
	errs = append(errs, c.SetOrderErred(ctx, offering, "m", "tb"))
	bad := newClient(t, srv.URL(), secretToken+"x", func(o *waldur.ClientOptions) { o.Logger = logger })
	_, err = bad.ListOfferingUsers(ctx, offering)
	errs = append(errs, err)

	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "waldur request") || !strings.Contains(logs.String(), "status=503") {
		t.Errorf("expected per-request debug lines, got:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), secretToken) {
		t.Errorf("token in logs:\n%s", logs.String())
	}
	for i, err := range errs {
		if i > 0 && err == nil {
			t.Errorf("call %d did not fail", i)
		}
		if err != nil && strings.Contains(err.Error(), secretToken) {
			t.Errorf("token in error %d: %v", i, err)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// TestEchoedTokenIsMasked: a proxy that echoes the request headers in its error
// page must not bring the token into the error.
func TestEchoedTokenIsMasked(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"detail": "bad header ` + r.Header.Get("Authorization") + `"}`))
	}))
	defer hs.Close()
	_, err := newClient(t, hs.URL, secretToken).Version(context.Background())
	if err == nil || strings.Contains(err.Error(), secretToken) || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("error %v", err)
	}
}

// TestRedirectsAreNotFollowed: a redirect, to another host (a wrong base URL)
// or within the host (http → https, a canonical host name), is reported naming
// waldur_api_url and both URLs, and the token does not travel anywhere.
func TestRedirectsAreNotFollowed(t *testing.T) {
	for _, code := range append([]int{http.StatusMovedPermanently}, redirecttest.Codes...) {
		t.Run(http.StatusText(code), func(t *testing.T) {
			rec := redirecttest.NewRecorder(t)
			hs := redirecttest.Redirect(t, code, rec.URL)
			_, err := newClient(t, hs.URL, secretToken).Version(context.Background())
			if !waldur.HasStatus(err, code) {
				t.Errorf("error %v, want the %d answer", err, code)
			}
			redirecttest.AssertRefused(t, err, "waldur_api_url", hs.URL, rec.URL, secretToken)
			rec.AssertUntouched(t)
		})
	}
	t.Run("same host", func(t *testing.T) {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/moved/" {
				http.Redirect(w, r, "/moved/", http.StatusTemporaryRedirect)
			}
		}))
		defer hs.Close()
		_, err := newClient(t, hs.URL, secretToken).Version(context.Background())
		if !strings.Contains(err.Error(), "waldur_api_url: refused the redirect from "+hs.URL) ||
			!strings.Contains(err.Error(), "this client follows no redirect") {
			t.Errorf("error %v", err)
		}
	})
}

func TestResponseThatIsNotAnArray(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"envelope object", `{"count": 0, "results": []}`, "is not a JSON array"},
		{"html", `<html>maintenance</html>`, "is not a JSON array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(tt.body))
			}))
			defer hs.Close()
			_, err := newClient(t, hs.URL, secretToken).ListOfferingUsers(context.Background(), offering)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), hs.URL+"/api/marketplace-offering-users/") {
				t.Fatalf("error %v, want %q naming the URL", err, tt.want)
			}
		})
	}
}

func TestServerErrorPageIsCondensed(t *testing.T) {
	srv := waldurtest.New(t)
	srv.FailNext(1, 500)
	_, err := clientFor(t, srv, func(o *waldur.ClientOptions) { o.RetryMax = 0 }).Version(context.Background())
	var ae *waldur.APIError
	if !errors.As(err, &ae) || ae.Detail != "non-JSON body: <!doctype html> <html><body><h1>Server Error (500)</h1></body></html>" {
		t.Fatalf("error %v", err)
	}
}
