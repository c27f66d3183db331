package forgetest

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/waldur/waldur-gitops/internal/testenv/openapicheck"
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
type contract struct{ *openapicheck.Contract }

// operation is a request matched to an operation of the subset.
type operation = openapicheck.Operation

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
		c, err := openapicheck.Load(openapicheck.Config{Name: name, Data: data})
		if err != nil {
			return nil, fmt.Errorf("forgetest: %w", err)
		}
		return &contract{c}, nil
	}))
	return f.(func() (*contract, error))()
}

// match finds the operation of r, whose path must be relative to the API root.
func (c *contract) match(r *http.Request) (*operation, error) {
	op, err := c.Match(r)
	if err != nil {
		return nil, fmt.Errorf("%s %s is not an operation of the published API subset: %w", r.Method, r.URL.EscapedPath(), err)
	}
	return op, nil
}

// checkRequest validates parameters, body and credentials of a request, and
// also rejects what the description does not declare but a real forge would
// silently ignore (hiding a client bug): query parameters, and properties of
// a JSON object body.
func (c *contract) checkRequest(ctx context.Context, r *http.Request, body []byte, op *operation, auth openapi3filter.AuthenticationFunc) error {
	return errors.Join(append([]error{c.CheckRequest(ctx, r, body, op, auth)}, openapicheck.UndeclaredBodyProperties(op, body)...)...)
}

// checkResponse validates an answer against the operation's declared
// responses; a status the operation does not declare is itself an error, so
// the stand-in cannot answer what the real service never does.
func (c *contract) checkResponse(ctx context.Context, r *http.Request, body []byte, op *operation, status int, header http.Header, out []byte) error {
	if op.Route.Operation.Responses.Status(status) == nil && op.Route.Operation.Responses.Default() == nil && !undeclaredErrorStatus(status) {
		return fmt.Errorf("status %d is not declared for %s", status, op.ID())
	}
	return c.CheckResponse(ctx, r, body, op, status, header, out)
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
