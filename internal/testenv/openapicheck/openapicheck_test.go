package openapicheck

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
)

const spec = `openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /things/{id}:
    parameters:
      - {name: id, in: path, required: true, schema: {type: string, format: uuid}}
    post:
      operationId: things_update
      parameters:
        - {name: dry, in: query, schema: {type: boolean}}
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {name: {type: string}}}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object, required: [id], properties: {id: {type: string, format: uuid}}}
`

func load(t *testing.T) *Contract {
	t.Helper()
	c, err := Load(Config{Name: "test spec", Data: []byte(spec), SchemaOptions: []openapi3.SchemaValidationOption{
		openapi3.WithStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(`^[0-9a-f]{32}$`)),
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var noAuth openapi3filter.AuthenticationFunc = func(context.Context, *openapi3filter.AuthenticationInput) error { return nil }

// TestCheck: requests and answers are held to the document, undeclared query
// parameters are reported in name order, and the schema options apply.
func TestCheck(t *testing.T) {
	c := load(t)
	const id = "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name, path, body, answer string
		wantReq, wantBody        string
		wantResp                 string
	}{
		{name: "clean", path: "/things/" + id + "?dry=true", body: `{"name":"x"}`, answer: `{"id":"` + id + `"}`},
		{name: "undeclared query, sorted", path: "/things/" + id + "?zz=1&aa=2", wantReq: `query parameter "aa" is not declared for things_update` + "\n" + `query parameter "zz" is not declared for things_update`},
		{name: "bad path uuid", path: "/things/nope", wantReq: "id"},
		{name: "undeclared body property", path: "/things/" + id, body: `{"name":"x","extra":1}`, wantBody: `body property "extra" is not declared for things_update`},
		{name: "bad answer", path: "/things/" + id, answer: `{"id":"nope"}`, wantResp: "id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body))
			if tc.body != "" {
				r.Header.Set("Content-Type", "application/json")
			}
			op, err := c.Match(r)
			if err != nil || op.ID() != "things_update" {
				t.Fatalf("match: %v %v", op, err)
			}
			err = c.CheckRequest(context.Background(), r, []byte(tc.body), op, noAuth)
			if (err == nil) != (tc.wantReq == "") || (err != nil && !strings.Contains(err.Error(), tc.wantReq)) {
				t.Errorf("request: %v, want %q", err, tc.wantReq)
			}
			var bodyErr string
			if errs := UndeclaredBodyProperties(op, []byte(tc.body)); len(errs) > 0 {
				bodyErr = errs[0].Error()
			}
			if bodyErr != tc.wantBody {
				t.Errorf("body: %q, want %q", bodyErr, tc.wantBody)
			}
			if tc.answer == "" {
				return
			}
			h := http.Header{"Content-Type": {"application/json"}}
			err = c.CheckResponse(context.Background(), r, []byte(tc.body), op, http.StatusOK, h, []byte(tc.answer))
			if (err == nil) != (tc.wantResp == "") || (err != nil && !strings.Contains(err.Error(), tc.wantResp)) {
				t.Errorf("response: %v, want %q", err, tc.wantResp)
			}
		})
	}
	if _, err := c.Match(httptest.NewRequest(http.MethodGet, "/elsewhere", nil)); err == nil {
		t.Error("an unknown path matched")
	}
}

// TestMatchRemembers: a remembered match gives the route and parameters the
// router gave, its parameters are the caller's own, and a failed match is
// not remembered as a route.
func TestMatchRemembers(t *testing.T) {
	c := load(t)
	for _, id := range []string{"0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"} {
		var first *Operation
		for i := range 3 {
			op, err := c.Match(httptest.NewRequest(http.MethodPost, "/things/"+id+"?dry="+strconv.Itoa(i), nil))
			if err != nil {
				t.Fatal(err)
			}
			if op.ID() != "things_update" || op.Params["id"] != id {
				t.Fatalf("match %d of %s: %s %v", i, id, op.ID(), op.Params)
			}
			if first != nil && op.Route != first.Route {
				t.Errorf("match %d of %s: another route", i, id)
			}
			first = op
			op.Params["id"] = "changed by the caller"
		}
	}
	if len(c.routes.m) != 2 {
		t.Errorf("%d routes remembered, want 2", len(c.routes.m))
	}
	for range 2 {
		if _, err := c.Match(httptest.NewRequest(http.MethodGet, "/things/x", nil)); err == nil {
			t.Error("GET matched a path that has only POST")
		}
	}
}
