package forgetest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Requests the published descriptions do not allow are recorded as
// violations (which fail the test that started the server unless taken), and
// answered with an error.
func TestRequestsOutsideTheDescriptionAreViolations(t *testing.T) {
	cases := []struct {
		name, typ, method, path, body string
		header                        map[string]string
		want                          string
	}{
		{"gitea has no head filter", "gitea", "GET", "/api/v1/repos/site/tenants/pulls?state=open&head=site:b", "",
			map[string]string{"Authorization": "token s3cret"}, `query parameter "head" is not declared`},
		{"gitea state enum", "gitea", "GET", "/api/v1/repos/site/tenants/pulls?state=opened", "",
			map[string]string{"Authorization": "token s3cret"}, "state"},
		{"gitea token keyword", "gitea", "GET", "/api/v1/repos/site/tenants/pulls", "",
			map[string]string{"Authorization": "Bearer s3cret"}, `"token" followed by one credential`},
		{"github per_page spelled as gitea's", "github", "GET", "/repos/site/tenants/pulls?limit=50", "",
			map[string]string{"Authorization": "Bearer s3cret"}, `query parameter "limit" is not declared`},
		{"github credential shape", "github", "GET", "/repos/site/tenants/pulls", "",
			map[string]string{"Authorization": "s3cret"}, "header Authorization"},
		{"github body field misspelled", "github", "POST", "/repos/site/tenants/pulls", `{"title":"t","head":"b","base":"main","description":"x"}`,
			map[string]string{"Authorization": "Bearer s3cret", "Content-Type": "application/json"}, `body property "description" is not declared`},
		{"github unknown operation", "github", "PUT", "/repos/site/tenants/pulls", "",
			map[string]string{"Authorization": "Bearer s3cret"}, "not an operation"},
		{"gitlab create without target branch", "gitlab", "POST", "/api/v4/projects/site%2Ftenants/merge_requests", `{"source_branch":"b","title":"t"}`,
			map[string]string{"PRIVATE-TOKEN": "s3cret", "Content-Type": "application/json"}, "target_branch"},
		{"gitlab state spelled as github's", "gitlab", "GET", "/api/v4/projects/site%2Ftenants/merge_requests?state=open", "",
			map[string]string{"PRIVATE-TOKEN": "s3cret"}, "state"},
		{"gitlab token header", "gitlab", "GET", "/api/v4/projects/site%2Ftenants/merge_requests", "",
			map[string]string{"Authorization": "Bearer s3cret"}, "PRIVATE-TOKEN"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t, tc.typ, "site/tenants", "s3cret")
			req, err := http.NewRequestWithContext(context.Background(), tc.method, s.http.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			v := s.TakeViolations()
			if resp.StatusCode/100 != 4 || len(v) == 0 || !strings.Contains(strings.Join(v, "\n"), tc.want) {
				t.Errorf("status %d, violations %q; want a 4xx and a violation naming %q", resp.StatusCode, v, tc.want)
			}
		})
	}
}

// The stand-in's answers are themselves checked: one missing a field the
// description requires, or with a status it does not declare, is a violation.
func TestAnswersOutsideTheDescriptionAreViolations(t *testing.T) {
	cases := []struct {
		name, typ, path string
		status          int
		body            string
		want            string
	}{
		{"github pull without html_url", "github", "/repos/site/tenants/pulls", 200, `[{"number":1}]`, "html_url"},
		{"gitlab merge request without web_url", "gitlab", "/projects/site%2Ftenants/merge_requests", 200, `[{"id":1,"iid":1,"project_id":1,"title":"t","state":"opened","source_branch":"b","target_branch":"main"}]`, "web_url"},
		{"gitlab state outside its enum", "gitlab", "/projects/site%2Ftenants/merge_requests", 200, `[{"id":1,"iid":1,"project_id":1,"title":"t","state":"open","source_branch":"b","target_branch":"main","web_url":"u"}]`, "state"},
		{"gitea undeclared status", "gitea", "/repos/site/tenants/pulls", 500, `{}`, "status 500 is not declared"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadContract(tc.typ)
			if err != nil {
				t.Fatal(err)
			}
			r, _ := http.NewRequest(http.MethodGet, "http://forge.invalid"+tc.path, nil)
			op, err := c.match(r)
			if err != nil {
				t.Fatal(err)
			}
			h := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
			err = c.checkResponse(context.Background(), r, nil, op, tc.status, h, bytes.NewBufferString(tc.body).Bytes())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
}
