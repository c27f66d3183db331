package waldur

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// Site-agent identities (GET/POST marketplace-site-agent-identities/, PUT
// marketplace-site-agent-identities/<uuid>/, POST …/<uuid>/register_service/
// and marketplace-site-agent-services/<uuid>/register_processor/): how a
// service provider's agent shows up in Waldur. All exist since 7.9.0
// (FeatureAgentIdentity); the compatibility answer of an identity is filled
// from 8.1.3 on (FeatureAgentCompatibility).

// AgentDependency is one package the agent runs with, and its version.
type AgentDependency struct {
	Package string `json:"package"`
	Version string `json:"version"`
}

// AgentCompatibility is Waldur's verdict on an agent identity's version
// (8.1.3): status is compatible, incompatible or unknown.
type AgentCompatibility struct {
	Status          string `json:"status"`
	Message         string `json:"message"`
	MinimumRequired string `json:"minimum_required,omitempty"`
}

// Agent compatibility statuses.
const (
	AgentCompatible   = "compatible"
	AgentIncompatible = "incompatible"
)

// AgentServiceRef is a service as an identity lists it (NestedAgentService).
type AgentServiceRef struct {
	UUID  UUID   `json:"uuid"`
	Name  string `json:"name"`
	Mode  string `json:"mode,omitempty"`
	State string `json:"state,omitempty"`
}

// AgentIdentity is a site-agent identity of an offering.
type AgentIdentity struct {
	UUID          UUID                `json:"uuid"`
	Offering      UUID                `json:"offering"`
	Name          string              `json:"name"`
	Version       string              `json:"version,omitempty"`
	Dependencies  []AgentDependency   `json:"dependencies,omitempty"`
	Services      []AgentServiceRef   `json:"services"`
	Compatibility *AgentCompatibility `json:"compatibility,omitempty"`
}

// AgentIdentityRequest is the body that creates or updates an identity.
type AgentIdentityRequest struct {
	Offering     UUID              `json:"offering"`
	Name         string            `json:"name"`
	Version      string            `json:"version,omitempty"`
	Dependencies []AgentDependency `json:"dependencies"`
}

// AgentProcessor is a processor of an agent service.
type AgentProcessor struct {
	UUID           UUID   `json:"uuid"`
	Name           string `json:"name"`
	BackendType    string `json:"backend_type"`
	BackendVersion string `json:"backend_version,omitempty"`
}

// AgentService is a service (one mode the agent runs in) of an identity.
type AgentService struct {
	UUID       UUID             `json:"uuid"`
	Name       string           `json:"name"`
	Mode       string           `json:"mode,omitempty"`
	State      string           `json:"state"`
	Processors []AgentProcessor `json:"processors"`
	// Created is true when Waldur answered 201 (the service is new), false
	// for 200 (it existed).
	Created bool `json:"-"`
}

// FindAgentIdentity returns the identity named name of the offering; nil with
// a nil error when there is none. Waldur filters by name and offering_uuid;
// the answer is checked for both again.
func (c *Client) FindAgentIdentity(ctx context.Context, offering UUID, name string) (*AgentIdentity, error) {
	off, err := canonical("offering", offering)
	if err != nil {
		return nil, fmt.Errorf("find agent identity %q: %w", name, err)
	}
	q := url.Values{"name": {name}, "offering_uuid": {off.Hex()}}
	list, err := listStrict[AgentIdentity](ctx, c, KindAgentList, "marketplace-site-agent-identities/", q)
	if err != nil {
		return nil, fmt.Errorf("find agent identity %q of offering %s: %w", name, off, err)
	}
	for i := range list {
		id, err := ParseUUID(string(list[i].Offering))
		if list[i].Name == name && err == nil && id == off {
			return &list[i], nil
		}
	}
	return nil, nil
}

// CreateAgentIdentity registers a new identity.
func (c *Client) CreateAgentIdentity(ctx context.Context, req AgentIdentityRequest) (*AgentIdentity, error) {
	var out AgentIdentity
	if err := c.identityWrite(ctx, KindAgentCreate, http.MethodPost, "marketplace-site-agent-identities/", req, &out); err != nil {
		return nil, fmt.Errorf("create agent identity %q: %w", req.Name, err)
	}
	return &out, nil
}

// UpdateAgentIdentity replaces an identity's name, version and dependencies.
func (c *Client) UpdateAgentIdentity(ctx context.Context, identity UUID, req AgentIdentityRequest) (*AgentIdentity, error) {
	id, err := canonical("agent identity", identity)
	var out AgentIdentity
	if err == nil {
		err = c.identityWrite(ctx, KindAgentUpdate, http.MethodPut, "marketplace-site-agent-identities/"+id.Hex()+"/", req, &out)
	}
	if err != nil {
		return nil, fmt.Errorf("update agent identity %q (%s): %w", req.Name, identity, err)
	}
	return &out, nil
}

func (c *Client) identityWrite(ctx context.Context, kind, method, path string, req AgentIdentityRequest, out any) error {
	off, err := canonical("offering", req.Offering)
	if err != nil {
		return err
	}
	req.Offering = off
	if req.Dependencies == nil {
		req.Dependencies = []AgentDependency{}
	}
	r, err := c.do(ctx, call{kind: kind, method: method, path: path, body: req})
	if err != nil {
		return err
	}
	return decodeJSON(r, out)
}

// RegisterAgentService registers the service name (with mode) of an
// identity; Waldur keeps one service per name, so registering an existing one
// returns it (Created false).
func (c *Client) RegisterAgentService(ctx context.Context, identity UUID, name, mode string) (*AgentService, error) {
	id, err := canonical("agent identity", identity)
	var out AgentService
	if err == nil {
		body := map[string]string{"name": name}
		if mode != "" {
			body["mode"] = mode
		}
		var r *reply
		r, err = c.do(ctx, call{kind: KindAgentService, method: http.MethodPost,
			path: "marketplace-site-agent-identities/" + id.Hex() + "/register_service/", body: body})
		if err == nil {
			err = decodeJSON(r, &out)
			out.Created = r.status == http.StatusCreated
		}
	}
	if err != nil {
		return nil, fmt.Errorf("register agent service %q of identity %s: %w", name, identity, err)
	}
	return &out, nil
}

// RegisterAgentProcessor registers a processor of a service; Waldur keeps
// one processor per name and service and updates its backend on a repeat.
func (c *Client) RegisterAgentProcessor(ctx context.Context, service UUID, p AgentProcessor) (*AgentProcessor, error) {
	id, err := canonical("agent service", service)
	var out AgentProcessor
	if err == nil {
		body := map[string]string{"name": p.Name, "backend_type": p.BackendType}
		if p.BackendVersion != "" {
			body["backend_version"] = p.BackendVersion
		}
		var r *reply
		r, err = c.do(ctx, call{kind: KindAgentProcessor, method: http.MethodPost,
			path: "marketplace-site-agent-services/" + id.Hex() + "/register_processor/", body: body})
		if err == nil {
			err = decodeJSON(r, &out)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("register agent processor %q of service %s: %w", p.Name, service, err)
	}
	return &out, nil
}
