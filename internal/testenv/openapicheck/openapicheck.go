// Package openapicheck holds the OpenAPI contract check the repository's
// stand-in servers share (waldur/waldurtest for Waldur, forge/forgetest for
// the Git forges): a request is matched to an operation of a published API
// subset, its parameters, body and credentials are validated, and so is the
// answer the stand-in gives, so that a stand-in cannot accept or answer what
// the real service would not.
package openapicheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Config describes a contract to Load.
type Config struct {
	// Name names the document in errors.
	Name string
	// Data is the OpenAPI document (YAML or JSON).
	Data []byte
	// ValidateOptions are passed to the document's own validation.
	ValidateOptions []openapi3.ValidationOption
	// Adjust, when set, changes the validated document before it is routed
	// (a deliberate deviation from the published text).
	Adjust func(*openapi3.T) error
	// SchemaOptions are used when validating parameters and bodies.
	SchemaOptions []openapi3.SchemaValidationOption
}

// Contract validates the requests a stand-in receives and the answers it
// sends against one OpenAPI document.
type Contract struct {
	// Doc is the parsed document.
	Doc        *openapi3.T
	router     routers.Router
	schemaOpts []openapi3.SchemaValidationOption
	// routes remembers the requests already matched: a stand-in serving a
	// benchmark matches the same few thousand paths every run.
	routes routeMemo
}

// routeMemo maps a request's method, host and path to its matched route.
type routeMemo struct {
	mu sync.Mutex
	m  map[string]Operation
}

// maxRoutes bounds routeMemo; it starts over when full.
const maxRoutes = 1 << 16

func routeKey(r *http.Request) string {
	return r.Method + " " + r.URL.Scheme + "://" + r.Host + r.URL.EscapedPath()
}

func (m *routeMemo) get(key string) (Operation, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	op, ok := m.m[key]
	return op, ok
}

func (m *routeMemo) put(key string, op Operation) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || len(m.m) >= maxRoutes {
		m.m = map[string]Operation{}
	}
	m.m[key] = op
}

// Load parses, validates and routes the document of c.
func Load(c Config) (*Contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(c.Data)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", c.Name, err)
	}
	if err := doc.Validate(loader.Context, c.ValidateOptions...); err != nil {
		return nil, fmt.Errorf("validate %s: %w", c.Name, err)
	}
	if c.Adjust != nil {
		if err := c.Adjust(doc); err != nil {
			return nil, err
		}
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route %s: %w", c.Name, err)
	}
	return &Contract{Doc: doc, router: router, schemaOpts: c.SchemaOptions}, nil
}

// Operation is a request matched to an operation of the document.
type Operation struct {
	// Route is the matched route; Params the path parameters by name.
	Route  *routers.Route
	Params map[string]string
}

// ID is the operationId.
func (o *Operation) ID() string { return o.Route.Operation.OperationID }

// Match finds the operation of r, whose URL path must already be relative to
// the API root; the error is the router's, for the caller to word.
func (c *Contract) Match(r *http.Request) (*Operation, error) {
	key := routeKey(r)
	if op, ok := c.routes.get(key); ok {
		op.Params = maps.Clone(op.Params)
		return &op, nil
	}
	route, params, err := c.router.FindRoute(r)
	if err != nil {
		return nil, err
	}
	c.routes.put(key, Operation{Route: route, Params: maps.Clone(params)})
	return &Operation{Route: route, Params: params}, nil
}

// CheckRequest validates parameters, body and credentials (through auth) of
// a request with the given body, and also rejects query parameters the
// operation does not declare: the real service would silently ignore them,
// hiding a client bug. The errors are joined, query parameters in name
// order.
func (c *Contract) CheckRequest(ctx context.Context, r *http.Request, body []byte, op *Operation, auth openapi3filter.AuthenticationFunc) error {
	var errs []error
	if err := openapi3filter.ValidateRequest(ctx, c.input(r, body, op, auth)); err != nil {
		errs = append(errs, err)
	}
	declared := declaredQueryParams(op.Route)
	for _, name := range slices.Sorted(maps.Keys(r.URL.Query())) {
		if !slices.Contains(declared, name) {
			errs = append(errs, fmt.Errorf("query parameter %q is not declared for %s", name, op.ID()))
		}
	}
	return errors.Join(errs...)
}

// UndeclaredBodyProperties names the top-level properties of a JSON object
// body that the operation's request schema does not declare (nil for a body
// that is no object: the schema check reports it).
func UndeclaredBodyProperties(op *Operation, body []byte) []error {
	rb := op.Route.Operation.RequestBody
	if rb == nil || rb.Value == nil || len(body) == 0 {
		return nil
	}
	mt := rb.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return nil
	}
	var in map[string]any
	if err := json.Unmarshal(body, &in); err != nil {
		return nil
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(in)) {
		if _, ok := mt.Schema.Value.Properties[name]; !ok {
			errs = append(errs, fmt.Errorf("body property %q is not declared for %s", name, op.ID()))
		}
	}
	return errs
}

// CheckResponse validates an answer (status, header, body out) to the request
// r with body against the operation's declared responses. A status the
// operation does not declare, with no default response, passes.
func (c *Contract) CheckResponse(ctx context.Context, r *http.Request, body []byte, op *Operation, status int, header http.Header, out []byte) error {
	noAuth := func(context.Context, *openapi3filter.AuthenticationInput) error { return nil }
	return openapi3filter.ValidateResponse(ctx, &openapi3filter.ResponseValidationInput{
		RequestValidationInput: c.input(r, body, op, noAuth),
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(out)),
		Options:                &openapi3filter.Options{MultiError: true, SchemaValidationOptions: c.schemaOpts},
	})
}

// input is the validation input of r with body, readable as often as the
// validation needs.
func (c *Contract) input(r *http.Request, body []byte, op *Operation, auth openapi3filter.AuthenticationFunc) *openapi3filter.RequestValidationInput {
	req := r.Clone(r.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	if len(body) == 0 {
		req.Body = http.NoBody
	}
	return &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: op.Params,
		Route:      op.Route,
		Options: &openapi3filter.Options{
			MultiError:                        true,
			RejectWhenRequestBodyNotSpecified: true,
			AuthenticationFunc:                auth,
			SchemaValidationOptions:           c.schemaOpts,
		},
	}
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
