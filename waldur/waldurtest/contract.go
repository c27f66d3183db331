package waldurtest

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// subsetYAML is the Waldur 8.0.5 OpenAPI subset the fake server is checked
// against (see the provenance header inside the file).
//
//go:embed testdata/openapi-subset.yaml
var subsetYAML []byte

// contract validates requests and responses against the OpenAPI subset.
type contract struct {
	doc        *openapi3.T
	router     routers.Router
	schemaOpts []openapi3.SchemaValidationOption
}

// uuidPattern is Waldur's UUID in either spelling: 32 hex digits (what the server
// emits) or the dashed RFC form (which it accepts on input).
var uuidPattern = regexp.MustCompile(`^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$`)

// sharedContract parses the embedded document once per process: it is an
// immutable value derived from embedded data, and parsing it for every fake
// server would dominate the run time of short tests.
var sharedContract = sync.OnceValues(loadContract)

func loadContract() (*contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(subsetYAML)
	if err != nil {
		return nil, fmt.Errorf("load openapi subset: %w", err)
	}
	// The upstream document carries one example that violates its own schema
	// (set_usage amounts as numbers), so examples are not checked.
	if err := doc.Validate(loader.Context, openapi3.DisableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("validate openapi subset: %w", err)
	}
	if err := widenUsageAmount(doc); err != nil {
		return nil, err
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route openapi subset: %w", err)
	}
	return &contract{
		doc:    doc,
		router: router,
		schemaOpts: []openapi3.SchemaValidationOption{
			openapi3.WithStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(uuidPattern.String())),
		},
	}, nil
}

// widenUsageAmount declares ComponentUsage.usage a number. The schema says
// integer, but the column behind it is decimal(20,2) and real servers answer
// fractional amounts (waldur-api.md §6.3); a fake held to the letter could not
// return what set_usage stored.
func widenUsageAmount(doc *openapi3.T) error {
	cu := doc.Components.Schemas["ComponentUsage"]
	if cu == nil || cu.Value == nil || cu.Value.Properties["usage"] == nil || cu.Value.Properties["usage"].Value == nil {
		return errors.New("openapi subset: ComponentUsage.usage not found")
	}
	cu.Value.Properties["usage"].Value.Type = &openapi3.Types{openapi3.TypeNumber}
	return nil
}

// operation is a request matched to the contract.
type operation struct {
	route  *routers.Route
	params map[string]string
}

// id is the operationId, used to dispatch to the fake's handlers.
func (o *operation) id() string { return o.route.Operation.OperationID }

// match finds the operation of r, whose URL path must already be relative to
// the server root (prefix removed).
func (c *contract) match(r *http.Request) (*operation, error) {
	route, params, err := c.router.FindRoute(r)
	if err != nil {
		return nil, fmt.Errorf("%s %s is not in the OpenAPI subset: %w", r.Method, r.URL.Path, err)
	}
	return &operation{route: route, params: params}, nil
}

func (c *contract) options() *openapi3filter.Options {
	return &openapi3filter.Options{
		MultiError:                        true,
		RejectWhenRequestBodyNotSpecified: true,
		AuthenticationFunc:                checkAuthScheme,
		SchemaValidationOptions:           c.schemaOpts,
	}
}

func (c *contract) input(r *http.Request, body []byte, op *operation) *openapi3filter.RequestValidationInput {
	req := r.Clone(r.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	if len(body) == 0 {
		req.Body = http.NoBody
	}
	return &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: op.params,
		Route:      op.route,
		Options:    c.options(),
	}
}

// checkRequest validates parameters, body and security of a request, and rejects
// query parameters that the operation does not declare (Waldur would silently
// ignore them, hiding a client bug).
func (c *contract) checkRequest(ctx context.Context, r *http.Request, body []byte, op *operation) error {
	var errs []error
	if err := openapi3filter.ValidateRequest(ctx, c.input(r, body, op)); err != nil {
		errs = append(errs, err)
	}
	declared := declaredQueryParams(op.route)
	for name := range r.URL.Query() {
		if !slices.Contains(declared, name) {
			errs = append(errs, fmt.Errorf("query parameter %q is not declared for %s", name, op.id()))
		}
	}
	return errors.Join(errs...)
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

// checkResponse validates a response against the operation's declared responses.
// Statuses the operation does not declare (Waldur's error answers) are skipped.
func (c *contract) checkResponse(ctx context.Context, r *http.Request, body []byte, op *operation, resp *response) error {
	return openapi3filter.ValidateResponse(ctx, &openapi3filter.ResponseValidationInput{
		RequestValidationInput: c.input(r, body, op),
		Status:                 resp.status,
		Header:                 resp.header,
		Body:                   io.NopCloser(bytes.NewReader(resp.body)),
		Options:                c.options(),
	})
}

// checkAuthScheme checks that a request carries credentials in the shape a
// security scheme needs: "Token <key>" for tokenAuth, "Bearer <token>" for the
// OIDC scheme. Whether the key is right is the server's business (401), not the
// contract's.
func checkAuthScheme(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	s := in.SecurityScheme
	req := in.RequestValidationInput.Request
	var header, keyword string
	switch {
	case s.Type == "apiKey" && s.In == "header":
		header, keyword = s.Name, "token"
	case s.Type == "http":
		header, keyword = "Authorization", s.Scheme
	default:
		return fmt.Errorf("security scheme %q of type %s is not supported by waldurtest", in.SecuritySchemeName, s.Type)
	}
	parts := strings.Fields(req.Header.Get(header))
	if len(parts) != 2 || !strings.EqualFold(parts[0], keyword) {
		return fmt.Errorf("header %s is not %q followed by one credential", header, keyword)
	}
	return nil
}
