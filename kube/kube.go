// Package kube reads the little of a cluster that closing the loop with Waldur
// needs: whether a tenant namespace exists, and its ResourceQuotas (spec.hard to
// see that a quota was applied, status.used to measure usage). It only reads,
// through the dynamic client, so it needs no typed clientset and no write
// permission: get and list on namespaces and resourcequotas.
package kube

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/waldur/waldur-gitops/internal/hostbound"
)

// Resources read.
var (
	NamespacesGVR     = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	ResourceQuotasGVR = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}
	// FluxKustomizationsGVR are Flux's Kustomizations (kustomize-controller).
	FluxKustomizationsGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
)

// pageSize is the page size of list calls.
const pageSize = 500

// Source names a cluster as the config does: a kubeconfig file ("" for
// client-go's rules: $KUBECONFIG, ~/.kube/config, the in-cluster service
// account) and a context ("" for the current one).
type Source struct {
	Path    string
	Context string
}

// String names the source in messages.
func (s Source) String() string {
	p := s.Path
	if p == "" {
		p = "the default kubeconfig"
	}
	if s.Context != "" {
		return p + " (context " + s.Context + ")"
	}
	return p
}

// RESTConfig loads the client configuration of the source. Its clients
// follow a redirect only within the API server's origin: client-go would
// follow one anywhere, its token and client certificate with it.
func (s Source) RESTConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = s.Path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: s.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", s, err)
	}
	bindToHost(cfg, s.ServerKey())
	return cfg, nil
}

// Namespace is the namespace of the source's context, or of the in-cluster
// service account ("default" when neither names one).
func (s Source) Namespace() (string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = s.Path
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: s.Context}).Namespace()
	if err != nil {
		return "", fmt.Errorf("namespace of kubeconfig %s: %w", s, err)
	}
	return ns, nil
}

// ServerKey names the API server's URL of the source in messages.
func (s Source) ServerKey() string {
	if s.Path == "" {
		return "the server of " + s.String()
	}
	return "the server of kubeconfig " + s.String()
}

// bindToHost makes every client of cfg refuse a redirect to another scheme,
// host or port (hostbound), key naming where the server URL came from.
func bindToHost(cfg *rest.Config, key string) {
	wrap := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if wrap != nil {
			rt = wrap(rt)
		}
		return hostbound.Transport(rt, key, hostbound.SameOrigin)
	}
}

// Namespace is what is read of a namespace.
type Namespace struct {
	Name   string
	Labels map[string]string
	// Terminating is set once the namespace is being deleted.
	Terminating bool
}

// Quota is what is read of a ResourceQuota.
type Quota struct {
	Namespace, Name string
	Hard, Used      map[string]resource.Quantity
}

// Reader reads namespaces and quotas. Its methods are safe for concurrent use.
type Reader struct {
	dyn     dynamic.Interface
	version func() (string, error)
}

// NewReader builds a reader for a cluster.
func NewReader(cfg *rest.Config) (*Reader, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "waldur-gitops"
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster client: %w", err)
	}
	return &Reader{dyn: dyn, version: func() (string, error) {
		v, err := disc.ServerVersion()
		if err != nil {
			return "", err
		}
		return v.GitVersion, nil
	}}, nil
}

// Open loads the source's kubeconfig and builds a reader.
func Open(s Source) (*Reader, error) {
	cfg, err := s.RESTConfig()
	if err != nil {
		return nil, err
	}
	return NewReader(cfg)
}

// NewReaderFor wraps a dynamic client, for tests with client-go's fake.
func NewReaderFor(dyn dynamic.Interface) *Reader { return &Reader{dyn: dyn} }

// Version returns the API server's version ("" when the reader has no
// discovery client).
func (r *Reader) Version(context.Context) (string, error) {
	if r.version == nil {
		return "", nil
	}
	v, err := r.version()
	if err != nil {
		return "", fmt.Errorf("read the server version: %w", err)
	}
	return v, nil
}

// Namespace reads one namespace; nil without error when it does not exist.
func (r *Reader) Namespace(ctx context.Context, name string) (*Namespace, error) {
	u, err := r.dyn.Resource(NamespacesGVR).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read namespace %s: %w", name, err)
	}
	ns := toNamespace(u)
	return &ns, nil
}

// FluxApplied reads the status.lastAppliedRevision of a Flux Kustomization
// ("<branch>@sha1:<commit>"); found is false when it does not exist.
func (r *Reader) FluxApplied(ctx context.Context, namespace, name string) (revision string, found bool, err error) {
	u, err := r.dyn.Resource(FluxKustomizationsGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("read Flux Kustomization %s/%s: %w", namespace, name, err)
	}
	revision, _, _ = unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
	return revision, true, nil
}

// Namespaces lists the namespaces matching a label selector ("" for all),
// sorted by name.
func (r *Reader) Namespaces(ctx context.Context, selector string) ([]Namespace, error) {
	var out []Namespace
	err := r.list(ctx, r.dyn.Resource(NamespacesGVR), selector, func(u *unstructured.Unstructured) error {
		out = append(out, toNamespace(u))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	slices.SortFunc(out, func(a, b Namespace) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Quotas lists the ResourceQuotas of a namespace ("" for every namespace),
// sorted by namespace and name.
func (r *Reader) Quotas(ctx context.Context, namespace string) ([]Quota, error) {
	var res dynamic.ResourceInterface = r.dyn.Resource(ResourceQuotasGVR)
	if namespace != "" {
		res = r.dyn.Resource(ResourceQuotasGVR).Namespace(namespace)
	}
	var out []Quota
	err := r.list(ctx, res, "", func(u *unstructured.Unstructured) error {
		q, err := toQuota(u)
		if err != nil {
			return err
		}
		out = append(out, q)
		return nil
	})
	if err != nil {
		where := "every namespace"
		if namespace != "" {
			where = "namespace " + namespace
		}
		return nil, fmt.Errorf("list resource quotas of %s: %w", where, err)
	}
	slices.SortFunc(out, func(a, b Quota) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// CanList checks that the reader may list namespaces and resourcequotas in
// every namespace (one item each), which is what the report and the applied
// check need.
func (r *Reader) CanList(ctx context.Context) error {
	if _, err := r.dyn.Resource(NamespacesGVR).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("list namespaces: %w", err)
	}
	if _, err := r.dyn.Resource(ResourceQuotasGVR).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("list resourcequotas: %w", err)
	}
	return nil
}

// list pages through a list call.
func (r *Reader) list(ctx context.Context, res dynamic.ResourceInterface, selector string, each func(*unstructured.Unstructured) error) error {
	opts := metav1.ListOptions{LabelSelector: selector, Limit: pageSize}
	for {
		l, err := res.List(ctx, opts)
		if err != nil {
			return err
		}
		for i := range l.Items {
			if err := each(&l.Items[i]); err != nil {
				return err
			}
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

func toNamespace(u *unstructured.Unstructured) Namespace {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return Namespace{
		Name:        u.GetName(),
		Labels:      u.GetLabels(),
		Terminating: u.GetDeletionTimestamp() != nil || phase == "Terminating",
	}
}

func toQuota(u *unstructured.Unstructured) (Quota, error) {
	q := Quota{Namespace: u.GetNamespace(), Name: u.GetName()}
	var err error
	if q.Hard, err = quantities(u, "spec", "hard"); err != nil {
		return q, err
	}
	if q.Used, err = quantities(u, "status", "used"); err != nil {
		return q, err
	}
	return q, nil
}

func quantities(u *unstructured.Unstructured, fields ...string) (map[string]resource.Quantity, error) {
	m, _, err := unstructured.NestedStringMap(u.Object, fields...)
	if err != nil {
		return nil, fmt.Errorf("resourcequota %s/%s: %s: %w", u.GetNamespace(), u.GetName(), strings.Join(fields, "."), err)
	}
	out := make(map[string]resource.Quantity, len(m))
	for k, v := range m {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("resourcequota %s/%s: %s.%s=%q: %w", u.GetNamespace(), u.GetName(), strings.Join(fields, "."), k, v, err)
		}
		out[k] = q
	}
	return out, nil
}

// Unit says how a quota key is counted in reports.
type Unit struct {
	// Name is "core", "GiB" or "" (a plain count).
	Name string
	// Divisor turns the quantity's base value into the unit.
	Divisor float64
}

// UnitOf returns the unit of a quota key: cores for CPU keys (cpu,
// requests.cpu, limits.cpu), GiB for memory and storage keys, a count for
// everything else (pods, GPUs, object counts).
func UnitOf(key string) Unit {
	name := key
	if i := strings.LastIndexAny(key, "./"); i >= 0 {
		name = key[i+1:]
	}
	switch {
	case name == "cpu":
		return Unit{Name: "core", Divisor: 1}
	case name == "memory" || strings.HasSuffix(name, "storage"):
		return Unit{Name: "GiB", Divisor: 1 << 30}
	}
	return Unit{Divisor: 1}
}

// Amount converts a quantity of a quota key into its unit.
func Amount(key string, q resource.Quantity) float64 {
	return q.AsApproximateFloat64() / UnitOf(key).Divisor
}
