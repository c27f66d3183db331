package offboard

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/render"
)

// VerifiedCluster: the objects that grant access in the offering's tenants,
// read from the cluster, no longer name the user (GitOps, an offering with
// order_done_on: applied).
const VerifiedCluster = "cluster"

// Cluster reads an object from the cluster a target of an offering goes to.
type Cluster interface {
	// Get returns the object as YAML; found is false when the cluster has
	// no such object.
	Get(ctx context.Context, o *config.Offering, target string, ref ObjectRef) (data []byte, found bool, err error)
}

// Lister is a Cluster that can also read every object of a kind on the
// cluster of a target at once: one request instead of one per object.
type Lister interface {
	// List returns the objects of the kind as YAML by "namespace/name"
	// ("/name" for a cluster-scoped kind).
	List(ctx context.Context, o *config.Offering, target, apiVersion, kind string) (map[string][]byte, error)
}

// listFrom is how many objects of one kind a proof must read from a
// cluster before it lists the kind instead of getting each.
const listFrom = 16

// ObjectRef names an object on its cluster.
type ObjectRef struct {
	APIVersion, Kind, Namespace, Name string
}

func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// grantingFiles are the rendered files that can name a user: bindings and
// ManagedNamespaces (Rancher's project bindings name groups).
func granting(p string) bool {
	base := path.Base(p)
	for _, prefix := range []string{"rolebinding-", "clusterrolebinding-", "managednamespace-", "projectroletemplatebinding-"} {
		if strings.HasPrefix(base, prefix) {
			return true
		}
	}
	return false
}

// atCluster says why the cluster still lets x in; "" when every object
// that grants access in the offering's tenants (as committed now, and as
// before the publish), read from the cluster, names the user no more. The
// objects read are kept in seen for the run's other users.
func atCluster(ctx context.Context, c Cluster, x *user, pub *Published, seen map[string][]byte) (string, error) {
	prefix := x.o.DirName() + "/"
	files := render.Tree{}
	for _, t := range []render.Tree{pub.Before, pub.After} {
		for p, data := range t {
			if strings.HasPrefix(p, prefix) && granting(p) {
				files[p] = data
			}
		}
	}
	ids := map[string]bool{}
	for _, n := range names(x.o, x.u) {
		ids[n] = true
	}
	prefetch(ctx, c, x.o, files, seen)
	for _, p := range slices.Sorted(maps.Keys(files)) {
		ref, err := objectRef(files[p])
		if err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		key := p + "\x00" + ref.String()
		data, ok := seen[key]
		if !ok {
			target := strings.SplitN(p, "/", 3)[1]
			d, found, err := c.Get(ctx, x.o, target, ref)
			if err != nil {
				return "", fmt.Errorf("read %s from the cluster: %w", ref, err)
			}
			if !found {
				d = nil
			}
			seen[key], data = d, d
		}
		if mentions(data, ids) {
			return "the cluster's " + ref.String() + " still names the user (the consumer has not applied the removal yet)", nil
		}
	}
	return "", nil
}

// prefetch fills seen, when c is a Lister, with the objects of every kind
// of which at least listFrom are still to be read from one target's
// cluster, listed at once (an object the list does not hold is absent). A
// list that fails leaves its objects to be read one by one.
func prefetch(ctx context.Context, c Cluster, o *config.Offering, files render.Tree, seen map[string][]byte) {
	l, ok := c.(Lister)
	if !ok {
		return
	}
	type item struct {
		key string
		ref ObjectRef
	}
	groups := map[[3]string][]item{} // target, apiVersion, kind
	for p, data := range files {
		ref, err := objectRef(data)
		if err != nil {
			continue // atCluster reports it
		}
		key := p + "\x00" + ref.String()
		if _, ok := seen[key]; ok {
			continue
		}
		g := [3]string{strings.SplitN(p, "/", 3)[1], ref.APIVersion, ref.Kind}
		groups[g] = append(groups[g], item{key, ref})
	}
	for g, items := range groups {
		if len(items) < listFrom {
			continue
		}
		objs, err := l.List(ctx, o, g[0], g[1], g[2])
		if err != nil {
			continue
		}
		for _, it := range items {
			seen[it.key] = objs[it.ref.Namespace+"/"+it.ref.Name]
		}
	}
}

// objectRef reads what names a rendered object.
func objectRef(data []byte) (ObjectRef, error) {
	var o struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name, Namespace string
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(data, &o); err != nil {
		return ObjectRef{}, fmt.Errorf("not an object: %w", err)
	}
	if o.Kind == "" || o.Metadata.Name == "" {
		return ObjectRef{}, fmt.Errorf("not an object: no kind or name")
	}
	return ObjectRef{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Metadata.Namespace, Name: o.Metadata.Name}, nil
}

// KubeCluster reads objects with the kubeconfig each offering's settings
// name for the target (config.Settings.Kubeconfig), one client per
// kubeconfig and context.
type KubeCluster struct {
	mu      sync.Mutex
	clients map[kube.Source]dynamic.Interface
}

// Get implements Cluster. The resource is the kind's lower-case plural
// (RoleBinding: rolebindings), as for every kind the templates render.
func (k *KubeCluster) Get(ctx context.Context, o *config.Offering, target string, ref ObjectRef) ([]byte, bool, error) {
	p, c := o.Settings.Kubeconfig(target)
	src := kube.Source{Path: p, Context: c}
	dyn, err := k.client(src)
	if err != nil {
		return nil, false, err
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", ref, err)
	}
	res := dyn.Resource(gv.WithResource(strings.ToLower(ref.Kind) + "s"))
	var ri dynamic.ResourceInterface = res
	if ref.Namespace != "" {
		ri = res.Namespace(ref.Namespace)
	}
	u, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	data, err := yaml.Marshal(u.Object)
	return data, true, err
}

// List implements Lister, a page of 500 objects at a time.
func (k *KubeCluster) List(ctx context.Context, o *config.Offering, target, apiVersion, kind string) (map[string][]byte, error) {
	p, c := o.Settings.Kubeconfig(target)
	src := kube.Source{Path: p, Context: c}
	dyn, err := k.client(src)
	if err != nil {
		return nil, err
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", kind, apiVersion, err)
	}
	res := dyn.Resource(gv.WithResource(strings.ToLower(kind) + "s"))
	out := map[string][]byte{}
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := res.List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list %s on %s: %w", kind, src, err)
		}
		for _, u := range l.Items {
			data, err := yaml.Marshal(u.Object)
			if err != nil {
				return nil, fmt.Errorf("%s %s/%s: %w", kind, u.GetNamespace(), u.GetName(), err)
			}
			out[u.GetNamespace()+"/"+u.GetName()] = data
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}

func (k *KubeCluster) client(src kube.Source) (dynamic.Interface, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if d, ok := k.clients[src]; ok {
		return d, nil
	}
	d, err := src.Dynamic()
	if err != nil {
		return nil, fmt.Errorf("open the cluster %s: %w", src, err)
	}
	if k.clients == nil {
		k.clients = map[kube.Source]dynamic.Interface{}
	}
	k.clients[src] = d
	return d, nil
}
