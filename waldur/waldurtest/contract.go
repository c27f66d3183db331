package waldurtest

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/waldur/waldur-gitops/internal/testenv/openapicheck"
)

// subset81YAML is the Waldur 8.1.3 OpenAPI subset the fake server is checked
// against by default; subset805YAML the 8.0.5 subset WithSubset(Subset805)
// selects (see the provenance header inside each file).
var (
	//go:embed testdata/openapi-subset-8.1.yaml
	subset81YAML []byte
	//go:embed testdata/openapi-subset.yaml
	subset805YAML []byte
)

// Subset names one of the embedded OpenAPI subsets.
type Subset string

// The embedded subsets.
const (
	// Subset81 is the Waldur 8.1.3 subset (rebuilt from the 8.1.3 Python
	// client); the default. users/me, the provider offering and the plan are
	// contract operations in it.
	Subset81 Subset = "8.1.3"
	// Subset805 is the Waldur 8.0.5 subset (trimmed from the published 8.0.5
	// schema). users/me, the provider offering and the plan, real 8.0.5
	// endpoints it lacks, are served as extensions on allowed paths.
	Subset805 Subset = "8.0.5"
)

// subsetData returns the embedded document of a subset.
func subsetData(s Subset) ([]byte, error) {
	switch s {
	case Subset81:
		return subset81YAML, nil
	case Subset805:
		return subset805YAML, nil
	}
	return nil, fmt.Errorf("unknown openapi subset %q (want %q or %q)", s, Subset81, Subset805)
}

// contract validates requests and responses against the OpenAPI subset.
type contract struct {
	*openapicheck.Contract
	subset Subset
}

// uuidPattern is Waldur's UUID in either spelling: 32 hex digits (what the server
// emits) or the dashed RFC form (which it accepts on input).
var uuidPattern = regexp.MustCompile(`^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$`)

// sharedContracts parse each embedded document once per process: it is an
// immutable value derived from embedded data, and parsing it for every fake
// server would dominate the run time of short tests.
var sharedContracts = map[Subset]func() (*contract, error){
	Subset81:  sync.OnceValues(func() (*contract, error) { return loadContract(Subset81) }),
	Subset805: sync.OnceValues(func() (*contract, error) { return loadContract(Subset805) }),
}

// sharedContract returns the parsed contract of a subset.
func sharedContract(s Subset) (*contract, error) {
	load, ok := sharedContracts[s]
	if !ok {
		_, err := subsetData(s)
		return nil, err
	}
	return load()
}

func loadContract(s Subset) (*contract, error) {
	data, err := subsetData(s)
	if err != nil {
		return nil, err
	}
	c, err := openapicheck.Load(openapicheck.Config{
		Name: fmt.Sprintf("openapi subset %s", s),
		Data: data,
		// The upstream document carries one example that violates its own
		// schema (set_usage amounts as numbers), so examples are not checked.
		ValidateOptions: []openapi3.ValidationOption{openapi3.DisableExamplesValidation()},
		Adjust:          widenUsageAmount,
		SchemaOptions: []openapi3.SchemaValidationOption{
			openapi3.WithStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(uuidPattern.String())),
		},
	})
	if err != nil {
		return nil, err
	}
	return &contract{Contract: c, subset: s}, nil
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

// operation is a request matched to the contract; its ID is the
// operationId, used to dispatch to the fake's handlers.
type operation = openapicheck.Operation

// match finds the operation of r, whose URL path must already be relative to
// the server root (prefix removed).
func (c *contract) match(r *http.Request) (*operation, error) {
	op, err := c.Match(r)
	if err != nil {
		return nil, fmt.Errorf("%s %s is not in the OpenAPI subset: %w", r.Method, r.URL.Path, err)
	}
	return op, nil
}

// checkRequest validates parameters, body and security of a request, and rejects
// query parameters that the operation does not declare (Waldur would silently
// ignore them, hiding a client bug).
func (c *contract) checkRequest(ctx context.Context, r *http.Request, body []byte, op *operation) error {
	return c.CheckRequest(ctx, r, body, op, checkAuthScheme)
}

// checkResponse validates a response against the operation's declared responses.
// Statuses the operation does not declare (Waldur's error answers) are skipped.
func (c *contract) checkResponse(ctx context.Context, r *http.Request, body []byte, op *operation, resp *response) error {
	return c.CheckResponse(ctx, r, body, op, resp.status, resp.header, resp.body)
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
