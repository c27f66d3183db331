package waldurtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"

	"github.com/waldur/waldur-gitops/waldur"
)

// Site-agent identities, services and processors, with the semantics of
// Waldur's register endpoints: an identity's name is unique within its
// offering (a second create answers 400), register_service keeps one service
// per identity and name (an existing one is returned with 200 and its mode
// updated), register_processor one processor per service and name (an
// existing one is updated and returned with 200). Every identity answers the
// compatibility verdict set with SetAgentCompatibility (compatible by
// default).

var identityFilters = []filter{
	{"name", "name", exact},
	{"offering_uuid", "offering", uuidSingle},
	{"version", "version", exact},
}

// agentState holds the agent collections of the store.
type agentState struct {
	identities, services, processors *collection
	compat                           object
}

func newAgentState() agentState {
	return agentState{identities: newCollection(), services: newCollection(), processors: newCollection(),
		compat: object{"status": "compatible", "message": ""}}
}

// Tags of generated agent uuids.
const (
	tagAgentIdentity = iota + 100
	tagAgentService
	tagAgentProcessor
	tagEventSubscription
	tagEventQueue
)

// SetAgentCompatibility sets the compatibility answer of every agent identity
// (status compatible, incompatible or unknown).
func (s *Server) SetAgentCompatibility(status, message, minimumRequired string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := object{"status": status, "message": message}
	if minimumRequired != "" {
		c["minimum_required"] = minimumRequired
	}
	s.data.agent.compat = c
	for _, o := range s.data.agent.identities.items {
		o["compatibility"] = c
	}
}

// AgentObjects counts the stored agent identities, services and processors.
func (s *Server) AgentObjects() (identities, services, processors int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.data.agent
	return len(a.identities.items), len(a.services.items), len(a.processors.items)
}

// AgentIdentities returns the stored identities, decoded, in creation order.
func (s *Server) AgentIdentities() []waldur.AgentIdentity {
	s.mu.Lock()
	items := slices.Clone(s.data.agent.identities.items)
	s.mu.Unlock()
	out := make([]waldur.AgentIdentity, 0, len(items))
	for _, o := range items {
		var id waldur.AgentIdentity
		if err := roundTrip(o, &id); err != nil {
			s.t.Errorf("waldurtest: decode agent identity: %v", err)
		}
		out = append(out, id)
	}
	return out
}

// AgentProcessors returns the stored processors, decoded, in creation order.
func (s *Server) AgentProcessors() []waldur.AgentProcessor {
	s.mu.Lock()
	items := slices.Clone(s.data.agent.processors.items)
	s.mu.Unlock()
	out := make([]waldur.AgentProcessor, 0, len(items))
	for _, o := range items {
		var p waldur.AgentProcessor
		if err := roundTrip(o, &p); err != nil {
			s.t.Errorf("waldurtest: decode agent processor: %v", err)
		}
		out = append(out, p)
	}
	return out
}

func (s *Server) listAgentIdentities(r *http.Request, _ []byte, op *operation) *response {
	return s.list(r, op, s.data.agent.identities.items, identityFilters)
}

// identityFields copies the writable fields of an AgentIdentityRequest.
func identityFields(o, req object) {
	o["offering"] = uuidKey(req["offering"])
	o["name"] = req["name"]
	for _, k := range []string{"version", "dependencies", "config_file_path", "config_file_content", "last_restarted"} {
		if v, ok := req[k]; ok {
			o[k] = v
		}
	}
}

func (s *Server) createAgentIdentity(_ *http.Request, body []byte, _ *operation) *response {
	req, errResp := decodeBody(body)
	if errResp != nil {
		return errResp
	}
	name, _ := req["name"].(string)
	off := uuidKey(req["offering"])
	for _, o := range s.data.agent.identities.items {
		if o["name"] == name && uuidKey(o["offering"]) == off {
			return jsonResponse(http.StatusBadRequest, map[string][]string{"non_field_errors": {"The fields offering, name must make a unique set."}})
		}
	}
	seq := s.data.next()
	id := s.data.id("", tagAgentIdentity, seq)
	t := now()
	o := object{
		"uuid": id, "url": s.data.base + "/api/marketplace-site-agent-identities/" + id + "/",
		"created_by": nil, "created": t, "modified": t, "services": []object{},
		"compatibility": s.data.agent.compat, "version": nil, "dependencies": []any{},
		"config_file_path": nil, "config_file_content": nil, "last_restarted": t,
	}
	identityFields(o, req)
	s.data.agent.identities.put(o)
	return jsonResponse(http.StatusCreated, o)
}

func (s *Server) updateAgentIdentity(_ *http.Request, body []byte, op *operation) *response {
	o, req, bad := target(s.data.agent.identities, op, body)
	if bad != nil {
		return bad
	}
	identityFields(o, req)
	o["modified"] = now()
	return jsonResponse(http.StatusOK, o)
}

func (s *Server) registerAgentService(_ *http.Request, body []byte, op *operation) *response {
	ident, req, bad := target(s.data.agent.identities, op, body)
	if bad != nil {
		return bad
	}
	name, _ := req["name"].(string)
	status := http.StatusOK
	svc := s.data.agent.services.registered("identity", ident["uuid"], "name", name)
	if svc == nil {
		status = http.StatusCreated
		id := s.data.id("", tagAgentService, s.data.next())
		t := now()
		svc = object{"uuid": id, "url": s.data.base + "/api/marketplace-site-agent-services/" + id + "/",
			"identity": ident["uuid"], "identity_name": ident["name"], "name": name, "state": "Active",
			"created": t, "modified": t, "mode": nil, "statistics": object{}}
		s.data.agent.services.put(svc)
	}
	m, ok := req["mode"]
	if status == http.StatusOK && (!ok || reflect.DeepEqual(m, svc["mode"])) {
		s.mu.unchanged() // the agent registering again, as it does every run
	}
	if ok {
		svc["mode"] = m
	}
	s.refreshNested(ident)
	return jsonResponse(status, s.serviceWire(svc))
}

// serviceWire is a service with its processors.
func (s *Server) serviceWire(svc object) object {
	out := object{}
	for k, v := range svc {
		out[k] = v
	}
	procs := []object{}
	for _, p := range s.data.agent.processors.items {
		if p["service"] == svc["uuid"] {
			n := object{}
			for _, k := range []string{"uuid", "url", "name", "backend_type", "created", "modified", "last_run", "backend_version"} {
				n[k] = p[k]
			}
			procs = append(procs, n)
		}
	}
	out["processors"] = procs
	return out
}

// refreshNested recomputes an identity's list of services.
func (s *Server) refreshNested(ident object) {
	list := []object{}
	for _, o := range s.data.agent.services.items {
		if o["identity"] == ident["uuid"] {
			list = append(list, object{"uuid": o["uuid"], "url": o["url"], "name": o["name"], "state": o["state"],
				"created": o["created"], "modified": o["modified"], "mode": o["mode"], "statistics": object{}})
		}
	}
	ident["services"] = list
}

func (s *Server) registerAgentProcessor(_ *http.Request, body []byte, op *operation) *response {
	svc, req, bad := target(s.data.agent.services, op, body)
	if bad != nil {
		return bad
	}
	name, _ := req["name"].(string)
	status := http.StatusOK
	p := s.data.agent.processors.registered("service", svc["uuid"], "name", name)
	t := now()
	if p == nil {
		status = http.StatusCreated
		id := s.data.id("", tagAgentProcessor, s.data.next())
		p = object{"uuid": id, "url": s.data.base + "/api/marketplace-site-agent-processors/" + id + "/",
			"service": svc["uuid"], "service_name": svc["name"], "name": name, "created": t,
			"last_run": nil, "backend_version": nil}
		s.data.agent.processors.put(p)
	}
	p["backend_type"], p["modified"] = req["backend_type"], t
	if v, ok := req["backend_version"]; ok {
		p["backend_version"] = v
	}
	return jsonResponse(status, p)
}

// roundTrip decodes the JSON form of v into out.
func roundTrip(v any, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return nil
}
