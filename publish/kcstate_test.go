package publish_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/waldur/waldur-gitops/apply"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/publish"
)

const stateNS = "waldur-gitops"

// stateCluster starts a real API server where the user "stater" has only
// the example direct overlay's Keycloak state Role, and returns the admin's
// client and the user's store.
func stateCluster(t *testing.T) (*kubetest.Cluster, kubernetes.Interface) {
	t.Helper()
	c := kubetest.StartForTest(t, kubetest.Options{Users: []string{"stater"}})
	admin, err := kubernetes.NewForConfig(c.RESTConfig(kubetest.Admin))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: stateNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ApplyFiles(ctx, "../examples/deploy/overlays/direct/keycloak-state.yaml"); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "stater", Namespace: stateNS},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "waldur-gitops-keycloak-state"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "stater"}},
	}
	if _, err := admin.RbacV1().RoleBindings(stateNS).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The authorizer learns of the binding asynchronously.
	deadline := time.Now().Add(time.Minute)
	for {
		review := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: "stater", ResourceAttributes: &authzv1.ResourceAttributes{
			Namespace: stateNS, Verb: "update", Resource: "configmaps", Name: publish.StateConfigMap}}}
		got, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed {
			return c, admin
		}
		if time.Now().After(deadline) {
			t.Fatal("the example Role was not in force within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestConfigMapStore: the Keycloak memory round-trips through the
// ConfigMaps of a real API server with no more access than the example
// direct overlay grants — in one ConfigMap or in chunks, the chunks a larger
// state left emptied when it shrinks — a chunk changed behind its back is a
// corrupt state, and a dry run's store writes nothing.
func TestConfigMapStore(t *testing.T) {
	c, admin := stateCluster(t)
	ctx := t.Context()
	store := func() *publish.ConfigMapStore {
		return &publish.ConfigMapStore{Kubeconfig: c.KubeconfigPath("stater"), Namespace: stateNS}
	}
	if data, err := store().Load(ctx); data != nil || err != nil {
		t.Fatalf("nothing stored yet: Load = %d bytes, %v", len(data), err)
	}
	random := func(n int) []byte {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return b
	}
	w := store()
	for _, tc := range []struct {
		name   string
		data   []byte
		chunks int
	}{
		{"small", []byte("one ConfigMap"), 1},
		{"chunked", random(2*publish.StateChunk + 1000), 3},
		{"shrunk", random(1000), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := w.Save(ctx, tc.data); err != nil {
				t.Fatal(err)
			}
			got, err := store().Load(ctx)
			if err != nil || !bytes.Equal(got, tc.data) {
				t.Fatalf("Load = %d bytes, %v; want the %d saved", len(got), err, len(tc.data))
			}
			for i := 1; i < 3; i++ {
				cm, err := admin.CoreV1().ConfigMaps(stateNS).Get(ctx, publish.StateConfigMap+"-"+string(rune('0'+i)), metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					cm, err = &corev1.ConfigMap{}, nil
				}
				if err != nil {
					t.Fatal(err)
				}
				if n := len(cm.BinaryData["state.gz"]); (i < tc.chunks) != (n > 0) {
					t.Errorf("chunk %d holds %d bytes with %d chunk(s) in use", i, n, tc.chunks)
				}
			}
		})
	}

	t.Run("a chunk changed behind its back", func(t *testing.T) {
		if err := w.Save(ctx, random(publish.StateChunk+10)); err != nil {
			t.Fatal(err)
		}
		cm, err := admin.CoreV1().ConfigMaps(stateNS).Get(ctx, publish.StateConfigMap+"-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.BinaryData["state.gz"] = []byte("forged")
		if _, err := admin.CoreV1().ConfigMaps(stateNS).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if data, err := store().Load(ctx); err == nil || !strings.Contains(err.Error(), "digest") {
			t.Errorf("Load of a forged chunk = %d bytes, %v; want a digest error", len(data), err)
		}
	})

	t.Run("a dry run writes nothing", func(t *testing.T) {
		if err := w.Save(ctx, []byte("before")); err != nil {
			t.Fatal(err)
		}
		cfg := &config.Config{}
		cluster := &publish.Cluster{Config: cfg, Options: apply.Options{Kubeconfig: c.KubeconfigPath("stater")}}
		t.Setenv("POD_NAMESPACE", stateNS)
		for _, dry := range []bool{true, false} {
			s := publish.KeycloakMemory(cfg, cluster, dry).Store()
			if err := s.Save(context.Background(), []byte("after")); err != nil {
				t.Fatal(err)
			}
			got, err := store().Load(ctx)
			if want := map[bool]string{true: "before", false: "after"}[dry]; err != nil || string(got) != want {
				t.Errorf("dry run %v: the ConfigMap holds %q (%v), want %q", dry, got, err, want)
			}
		}
	})
}

// TestGitStateRef: sync's Keycloak memory round-trips through the state ref
// of the GitOps repository; a writer that finds the ref moved since it read
// it still saves (the later write wins), and a dry run's store writes nothing.
func TestGitStateRef(t *testing.T) {
	repo := t.TempDir()
	gittest.InitBare(t, repo, "main")
	l, err := config.Parse([]byte("git: {url: "+repo+"}\n"+`offerings:
- name: Plain
  waldur_api_url: https://waldur.example.org/api/
  waldur_offering_uuid: 0ff00000000040008000000000000001
  backend_type: namespace
`), filepath.Join(t.TempDir(), "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := l.Config
	store := func(dry bool) keycloak.Store {
		return publish.KeycloakMemory(cfg, &publish.Git{Config: cfg}, dry).Store()
	}
	ref := func() string {
		return gittest.Git(t, repo, "show", gitsync.StateRef(publish.KeycloakStateName)+":"+publish.KeycloakStateName)
	}
	ctx := t.Context()
	a, b := store(false), store(false)
	for _, s := range []keycloak.Store{a, b} {
		if data, err := s.Load(ctx); data != nil || err != nil {
			t.Fatalf("no ref yet: Load = %q, %v", data, err)
		}
	}
	if err := b.Save(ctx, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := a.Save(ctx, []byte("a")); err != nil {
		t.Fatalf("a save after another writer: %v", err)
	}
	if got := ref(); got != "a" {
		t.Errorf("the state ref holds %q, want the later write", got)
	}
	if got, err := store(false).Load(ctx); err != nil || string(got) != "a" {
		t.Errorf("a new process reads %q, %v", got, err)
	}
	dry := store(true)
	if _, err := dry.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := dry.Save(ctx, []byte("dry")); err != nil || ref() != "a" {
		t.Errorf("a dry run's save: %v, the ref holds %q", err, ref())
	}
}
