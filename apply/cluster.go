package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/manifest"
)

// targetsOf lists the targets a backend type renders to, as registered.
func targetsOf(backendType string) []string { return backend.TargetsOf(backendType) }

// source names a cluster the way the user configured it: a kubeconfig file
// ("" for client-go's default rules) and a context ("" for the current one).
type source = kube.Source

// sourceFor returns the cluster an offering's target goes to. --kubeconfig
// replaces every kubeconfig key of the config file.
func (o *Options) sourceFor(off *config.Offering, target string) source {
	if o.Kubeconfig != "" {
		return source{Path: o.Kubeconfig}
	}
	path, ctx := off.Settings.Kubeconfig(target)
	return source{Path: path, Context: ctx}
}

// cluster is one API server and what a run learned about it.
type cluster struct {
	src    source
	name   string // for messages: the server URL and where it came from
	rc     rest.Interface
	dyn    dynamic.Interface
	mapper meta.RESTMapper
	err    error // connecting failed; every tenant on this cluster fails with it

	// inventory holds the managed objects of the configured offerings found on
	// the cluster, by key.
	inventory map[objKey]*unstructured.Unstructured
	// desired marks the keys rendered for this cluster.
	desired map[objKey]bool
	// namespaces marks the Namespaces rendered for this cluster.
	namespaces map[string]bool
	// missing marks the namespaces objects need that are neither rendered
	// nor there; waits holds the wait for each of them.
	missing map[string]bool
	waits   map[string]*nsWait
}

// nsWait is the one wait for a namespace that every object in it shares.
type nsWait struct {
	done chan struct{}
	err  error
}

// objKey identifies an object on one cluster. The group keeps two kinds of the
// same name apart.
type objKey struct {
	group, kind, namespace, name string
}

func (k objKey) subject() string {
	if k.namespace != "" {
		return k.kind + "/" + k.namespace + "/" + k.name
	}
	return k.kind + "/" + k.name
}

func keyOf(apiVersion, kind, namespace, name string) objKey {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return objKey{group: gv.Group, kind: kind, namespace: namespace, name: name}
}

func keyOfObject(o manifest.Object) objKey {
	return keyOf(o.APIVersion(), o.Kind(), o.Namespace(), o.Name())
}

func keyOfUnstructured(u *unstructured.Unstructured) objKey {
	return keyOf(u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName())
}

// Default client-side limits for one cluster. The API server's own priority
// and fairness protects it; these keep one run from hogging it.
const (
	clientQPS      = 100
	clientBurst    = 200
	requestTimeout = 2 * time.Minute
)

// connect builds the clients and reads the API server's discovery document.
func (c *cluster) connect(qps float32, log *slog.Logger, count func(string)) {
	cfg, err := c.src.RESTConfig()
	if err != nil {
		c.err = err
		c.name = c.src.String()
		return
	}
	c.name = cfg.Host + " from " + c.src.String()
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		switch {
		case qps == 0:
			cfg.QPS, cfg.Burst = clientQPS, clientBurst
		case qps < 0:
			cfg.QPS = -1 // client-go: no rate limiter
		default:
			cfg.QPS, cfg.Burst = qps, max(1, int(2*qps))
		}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = requestTimeout
	}
	cfg.UserAgent = version.UserAgent()
	cfg.WarningHandler = warningLogger{log: log.With("cluster", cfg.Host)}
	dcfg := dynamic.ConfigFor(cfg)
	dcfg.GroupVersion = nil
	dcfg.APIPath = "/"
	httpClient, err := rest.HTTPClientFor(dcfg)
	if err != nil {
		c.err = fmt.Errorf("cluster %s: %w", c.name, err)
		return
	}
	rc, err := rest.UnversionedRESTClientForConfigAndClient(dcfg, httpClient)
	if err != nil {
		c.err = fmt.Errorf("cluster %s: %w", c.name, err)
		return
	}
	disco, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		c.err = fmt.Errorf("cluster %s: %w", c.name, err)
		return
	}
	count("discovery")
	groups, err := restmapper.GetAPIGroupResources(disco)
	if err != nil {
		if len(groups) == 0 || !discovery.IsGroupDiscoveryFailedError(err) {
			c.err = fmt.Errorf("cluster %s: read the API discovery: %w", c.name, err)
			return
		}
		// An unavailable aggregated API (metrics, say) leaves the rest usable.
		log.Warn("some API groups could not be discovered", "cluster", c.name, "error", err.Error())
	}
	c.rc, c.dyn = rc, dynamic.New(rc)
	c.mapper = restmapper.NewDiscoveryRESTMapper(groups)
}

// warningLogger passes the API server's warnings (deprecations, unknown
// fields) to the run's log instead of client-go's stderr printer.
type warningLogger struct{ log *slog.Logger }

func (w warningLogger) HandleWarningHeader(code int, agent, text string) {
	if code == 299 && text != "" {
		w.log.Warn("API server warning", "warning", text)
	}
}

// path returns the URL path of an object, or of its collection when name is "".
func objectPath(m *meta.RESTMapping, namespace, name string) string {
	gvr := m.Resource
	p := "/apis/" + gvr.Group + "/" + gvr.Version
	if gvr.Group == "" {
		p = "/api/" + gvr.Version
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		p += "/namespaces/" + namespace
	}
	p += "/" + gvr.Resource
	if name != "" {
		p += "/" + name
	}
	return p
}

// serverApply server-side applies obj. It returns the HTTP status (201 when
// the object was created) and the object as the server left it (or would
// leave it, on a dry run).
func (c *cluster) serverApply(ctx context.Context, m *meta.RESTMapping, obj manifest.Object, dryRun, force bool) (int, *unstructured.Unstructured, error) {
	body, err := json.Marshal(map[string]any(obj))
	if err != nil {
		return 0, nil, err
	}
	req := c.rc.Patch(types.ApplyPatchType).AbsPath(objectPath(m, obj.Namespace(), obj.Name())).
		Param("fieldManager", FieldManager).Param("fieldValidation", "Strict")
	if force {
		req = req.Param("force", "true")
	}
	if dryRun {
		req = req.Param("dryRun", metav1.DryRunAll)
	}
	return decodeResult(req.Body(body).Do(ctx))
}

// dryRunCreate asks the server to validate obj as a new object in namespace,
// without storing it.
func (c *cluster) dryRunCreate(ctx context.Context, m *meta.RESTMapping, obj manifest.Object, namespace string) (int, *unstructured.Unstructured, error) {
	moved := manifest.Object(copyMap(obj))
	moved.Metadata()["namespace"] = namespace
	body, err := json.Marshal(map[string]any(moved))
	if err != nil {
		return 0, nil, err
	}
	req := c.rc.Post().AbsPath(objectPath(m, namespace, "")).
		Param("fieldManager", FieldManager).Param("fieldValidation", "Strict").Param("dryRun", metav1.DryRunAll)
	return decodeResult(req.Body(body).Do(ctx))
}

func decodeResult(r rest.Result) (int, *unstructured.Unstructured, error) {
	var code int
	r.StatusCode(&code)
	raw, err := r.Raw()
	if err != nil {
		if e := r.Error(); e != nil {
			err = e
		}
		return code, nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return code, nil, fmt.Errorf("decode the API server's answer: %w", err)
	}
	return code, u, nil
}

// list returns the objects of one resource that carry the managed-by label,
// in every namespace, page by page.
func (c *cluster) list(ctx context.Context, m *meta.RESTMapping, count func(string)) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	opts := metav1.ListOptions{LabelSelector: manifest.LabelManagedBy + "=" + manifest.ManagedByValue, Limit: 500}
	for {
		count("list")
		l, err := c.dyn.Resource(m.Resource).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, l.Items...)
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}

// remove deletes one object, only if it is still the one listed (same UID).
func (c *cluster) remove(ctx context.Context, m *meta.RESTMapping, u *unstructured.Unstructured, dryRun bool) error {
	uid := u.GetUID()
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &bg}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	ri := c.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return ri.Namespace(u.GetNamespace()).Delete(ctx, u.GetName(), opts)
	}
	return ri.Delete(ctx, u.GetName(), opts)
}

// copyMap copies a value of the JSON data model.
func copyMap(v map[string]any) map[string]any {
	out := make(map[string]any, len(v))
	for k, x := range v {
		out[k] = copyValue(x)
	}
	return out
}

func copyValue(x any) any {
	switch t := x.(type) {
	case map[string]any:
		return copyMap(t)
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = copyValue(e)
		}
		return l
	}
	return x
}

// isNamespace reports whether a key is a Namespace.
func (k objKey) isNamespace() bool { return k.group == "" && k.kind == "Namespace" }

var namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// namespaceExists reports whether a namespace exists.
func (c *cluster) namespaceExists(ctx context.Context, ns string) (bool, error) {
	_, err := c.dyn.Resource(namespaceGVR).Get(ctx, ns, metav1.GetOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, err
}

// waitNamespace polls until a namespace exists, for at most limit.
func (c *cluster) waitNamespace(ctx context.Context, ns string, limit time.Duration, count func(string)) error {
	deadline := time.Now().Add(limit)
	for {
		count("get")
		ok, err := c.namespaceExists(ctx, ns)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("namespace %q does not exist: it is not rendered, and nothing created it within %s", ns, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
