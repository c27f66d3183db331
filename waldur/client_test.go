package waldur_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

func TestNewClientValidatesOptions(t *testing.T) {
	valid := func() waldur.ClientOptions {
		o := waldur.DefaultClientOptions()
		o.BaseURL, o.Token = "https://waldur.example.org/api/", "abc123"
		return o
	}
	tests := []struct {
		name    string
		mod     func(*waldur.ClientOptions)
		wantErr string
	}{
		{"defaults", func(*waldur.ClientOptions) {}, ""},
		{"zero values take defaults", func(o *waldur.ClientOptions) { o.Timeout, o.PageSize, o.Concurrency, o.UserAgent = 0, 0, 0, "" }, ""},
		{"no retries", func(o *waldur.ClientOptions) { o.RetryMax = 0 }, ""},
		{"not http", func(o *waldur.ClientOptions) { o.BaseURL = "waldur.example.org" }, "scheme must be http or https"},
		{"empty token", func(o *waldur.ClientOptions) { o.Token = " " }, "waldur_api_token is empty"},
		{"token with a line break", func(o *waldur.ClientOptions) { o.Token = "abc\r\nX-Evil: 1" }, "whitespace or control"},
		{"page size above the server maximum", func(o *waldur.ClientOptions) { o.PageSize = 500 }, "page size 500"},
		{"negative concurrency", func(o *waldur.ClientOptions) { o.Concurrency = -1 }, "concurrency"},
		{"negative retries", func(o *waldur.ClientOptions) { o.RetryMax = -1 }, "retry max"},
		{"inverted waits", func(o *waldur.ClientOptions) { o.RetryWaitMin, o.RetryWaitMax = time.Second, time.Millisecond }, "retry waits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.mod(&o)
			_, err := waldur.NewClient(o)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "X-Evil") {
				t.Errorf("error repeats the token: %v", err)
			}
		})
	}
}

func TestDefaultClientOptions(t *testing.T) {
	o := waldur.DefaultClientOptions()
	if o.Timeout != 60*time.Second || o.PageSize != 300 || o.Concurrency != 8 || o.RetryMax != 5 ||
		o.RetryWaitMin != 200*time.Millisecond || o.RetryWaitMax != 5*time.Second || !o.VerifySSL {
		t.Errorf("defaults changed: %+v", o)
	}
}

// TestBaseURLVariants: every spelling of the base URL reaches <base>/api/…, also
// below a prefix ending in "api" that a character-set strip would damage.
func TestBaseURLVariants(t *testing.T) {
	for _, prefix := range []string{"", "/wapi"} {
		srv := waldurtest.New(t, waldurtest.WithPathPrefix(prefix))
		srv.AddResource(waldur.Resource{OfferingUUID: offering})
		root := strings.TrimSuffix(srv.URL(), "/")
		for _, suffix := range []string{"", "/", "/api", "/api/"} {
			t.Run(prefix+suffix, func(t *testing.T) {
				before := srv.Requests("/api/marketplace-provider-resources/")
				c := clientFor(t, srv, func(o *waldur.ClientOptions) { o.BaseURL = root + suffix })
				res, err := c.ListResources(context.Background(), offering)
				if err != nil {
					t.Fatal(err)
				}
				if len(res) != 1 || srv.Requests("/api/marketplace-provider-resources/") != before+1 {
					t.Errorf("got %d resources, %d requests", len(res), srv.Requests("/api/marketplace-provider-resources/")-before)
				}
			})
		}
	}
}

func TestRequestHeaders(t *testing.T) {
	srv := waldurtest.New(t)
	var mu sync.Mutex
	var headers []http.Header
	srv.OnRequest(func(r *http.Request, _ []byte) {
		mu.Lock()
		defer mu.Unlock()
		headers = append(headers, r.Header.Clone())
	})
	c := clientFor(t, srv, func(o *waldur.ClientOptions) { o.UserAgent = "waldur-gitops/1.2.3" })
	if _, err := c.Version(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.ApproveOrder(context.Background(), srv.AddOrder(offering, waldur.Order{})); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, h := range headers {
		for k, want := range map[string]string{
			"Authorization": "Token " + srv.Token(),
			"Accept":        "application/json",
			"User-Agent":    "waldur-gitops/1.2.3",
		} {
			if got := h.Get(k); got != want {
				t.Errorf("request %d: %s = %q, want %q", i, k, got, want)
			}
		}
	}
	if headers[0].Get("Content-Type") != "" || headers[1].Get("Content-Type") != "application/json" {
		t.Errorf("Content-Type must be set exactly when there is a body: %q, %q",
			headers[0].Get("Content-Type"), headers[1].Get("Content-Type"))
	}
}

func TestVersion(t *testing.T) {
	tests := []struct {
		name string
		opts []waldurtest.Option
		want string
	}{
		{name: "8.1 subset", want: "8.1.3"},
		{name: "8.0.5 subset", opts: []waldurtest.Option{waldurtest.WithSubset(waldurtest.Subset805)}, want: "8.0.5"},
		{name: "set version", opts: []waldurtest.Option{waldurtest.WithVersion("8.1.0")}, want: "8.1.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := waldurtest.New(t, tt.opts...)
			v, err := clientFor(t, srv).Version(context.Background())
			if err != nil || v.Version != tt.want {
				t.Fatalf("Version() = %+v, %v; want %s", v, err, tt.want)
			}
		})
	}
}
