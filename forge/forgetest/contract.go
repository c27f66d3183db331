package forgetest

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// specs holds the subsets of the forges' published API descriptions (see the
// provenance header in each file).
//
//go:embed testdata/*.yaml
var specs embed.FS

// specFile names the subset of each forge type.
var specFile = map[string]string{
	"github": "testdata/github-pulls.yaml",
	"gitea":  "testdata/gitea-pulls.yaml",
	"gitlab": "testdata/gitlab-merge-requests.yaml",
}

// contract validates the requests the stand-in receives and the answers it
// sends against one forge's subset.
type contract struct {
	doc    *openapi3.T
	router routers.Router
}

var contracts sync.Map // forge type -> func() (*contract, error)

// loadContract parses the subset of typ once per process.
func loadContract(typ string) (*contract, error) {
	f, _ := contracts.LoadOrStore(typ, sync.OnceValues(func() (*contract, error) {
		name, ok := specFile[typ]
		if !ok {
			return nil, fmt.Errorf("forgetest: unknown forge type %q", typ)
		}
		data, err := specs.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("forgetest: read %s: %w", name, err)
		}
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(data)
		if err != nil {
			return nil, fmt.Errorf("forgetest: load %s: %w", name, err)
		}
		if err := doc.Validate(loader.Context); err != nil {
			return nil, fmt.Errorf("forgetest: validate %s: %w", name, err)
		}
		router, err := gorillamux.NewRouter(doc)
		if err != nil {
			return nil, fmt.Errorf("forgetest: route %s: %w", name, err)
		}
		return &contract{doc: doc, router: router}, nil
	}))
	return f.(func() (*contract, error))()
}

// operation is a request matched to an operation of the subset.
type operation struct {
	route  *routers.Route
	params map[string]string
}

func (o *operation) id() string { return o.route.Operation.OperationID }

// match finds the operation of r, whose path must be relative to the API root.
func (c *contract) match(r *http.Request) (*operation, error) {
	route, params, err := c.router.FindRoute(r)
	if err != nil {
		return nil, fmt.Errorf("%s %s is not an operation of the published API subset: %w", r.Method, r.URL.EscapedPath(), err)
	}
	return &operation{route: route, params: params}, nil
}

func (c *contract) options(auth openapi3filter.AuthenticationFunc) *openapi3filter.Options {
	return &openapi3filter.Options{
		MultiError:                        true,
		RejectWhenRequestBodyNotSpecified: true,
		AuthenticationFunc:                auth,
	}
}

func (c *contract) input(r *http.Request, body []byte, op *operation, auth openapi3filter.AuthenticationFunc) *openapi3filter.RequestValidationInput {
	req := r.Clone(r.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	if len(body) == 0 {
		req.Body = http.NoBody
	}
	return &openapi3filter.RequestValidationInput{Request: req, PathParams: op.params, Route: op.route, Options: c.options(auth)}
}

// checkRequest validates parameters, body and credentials of a request, and
// also rejects what the description does not declare but a real forge would
// silently ignore (hiding a client bug): query parameters, and properties of
// a JSON object body.
func (c *contract) checkRequest(ctx context.Context, r *http.Request, body []byte, op *operation, auth openapi3filter.AuthenticationFunc) error {
	var errs []error
	if err := openapi3filter.ValidateRequest(ctx, c.input(r, body, op, auth)); err != nil {
		errs = append(errs, err)
	}
	declared := declaredQueryParams(op.route)
	for _, name := range sortedKeys(r.URL.Query()) {
		if !slices.Contains(declared, name) {
			errs = append(errs, fmt.Errorf("query parameter %q is not declared for %s", name, op.id()))
		}
	}
	errs = append(errs, undeclaredBodyProperties(op, body)...)
	return errors.Join(errs...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func declaredQueryParams(route *routers.Route) []string {
	var names []string
	for _, list := range []openapi3.Parameters{route.PathItem.Parameters, route.Operation.Parameters} {
		for _, p := range list {
			if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
				names = append(names, p.Value.Name)
			}
		}
	}
	return names
}

// undeclaredBodyProperties names the top-level properties of a JSON body that
// the operation's request schema does not declare.
func undeclaredBodyProperties(op *operation, body []byte) []error {
	rb := op.route.Operation.RequestBody
	if rb == nil || rb.Value == nil || len(body) == 0 {
		return nil
	}
	mt := rb.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return nil
	}
	var in map[string]any
	if err := jsonUnmarshal(body, &in); err != nil {
		return nil // the schema check reports a body that is not an object
	}
	var errs []error
	for _, name := range sortedKeys(in) {
		if _, ok := mt.Schema.Value.Properties[name]; !ok {
			errs = append(errs, fmt.Errorf("body property %q is not declared for %s", name, op.id()))
		}
	}
	return errs
}

// checkResponse validates an answer against the operation's declared
// responses; a status the operation does not declare is itself an error, so
// the stand-in cannot answer what the real service never does.
func (c *contract) checkResponse(ctx context.Context, r *http.Request, body []byte, op *operation, status int, header http.Header, out []byte) error {
	if op.route.Operation.Responses.Status(status) == nil && op.route.Operation.Responses.Default() == nil && !undeclaredErrorStatus(status) {
		return fmt.Errorf("status %d is not declared for %s", status, op.id())
	}
	in := c.input(r, body, op, func(context.Context, *openapi3filter.AuthenticationInput) error { return nil })
	return openapi3filter.ValidateResponse(ctx, &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(out)),
		Options:                &openapi3filter.Options{MultiError: true},
	})
}

// undeclaredErrorStatus is an error every endpoint of the three forges can
// answer though the descriptions list it for few operations: a missing or
// wrong credential (401) and an unknown repository (404).
func undeclaredErrorStatus(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusNotFound
}

// headerAuth checks that a request carries a credential in the shape a
// security scheme declares (an apiKey header, with a keyword for Gitea's
// "token <key>" form). Whether it is the right one is the server's business.
func headerAuth(keyword string) openapi3filter.AuthenticationFunc {
	return func(_ context.Context, in *openapi3filter.AuthenticationInput) error {
		s := in.SecurityScheme
		if s.Type != "apiKey" || s.In != "header" {
			return fmt.Errorf("security scheme %q of type %s is not supported by forgetest", in.SecuritySchemeName, s.Type)
		}
		v := in.RequestValidationInput.Request.Header.Get(s.Name)
		if keyword == "" {
			if v == "" || strings.ContainsAny(v, " \t") {
				return fmt.Errorf("header %s does not carry one credential", s.Name)
			}
			return nil
		}
		parts := strings.Fields(v)
		if len(parts) != 2 || !strings.EqualFold(parts[0], keyword) {
			return fmt.Errorf("header %s is not %q followed by one credential", s.Name, keyword)
		}
		return nil
	}
}
