package publish

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/waldur/waldur-gitops/kube"
)

// The ConfigMaps of the Keycloak memory in direct mode.
const (
	// StateConfigMap names the first ConfigMap; the others are
	// StateConfigMap-1, StateConfigMap-2, ...
	StateConfigMap = "waldur-gitops-keycloak-state"
	// StateChunk is the most one ConfigMap holds (a ConfigMap holds at most
	// 1 MiB).
	StateChunk = 900 << 10
	stateKey   = "state.gz"
	chunksAnn  = "waldur-gitops/chunks"
	digestAnn  = "waldur-gitops/sha256"
)

// podNamespaceEnv names the pod's namespace (the downward API's
// metadata.namespace), when it is set.
const podNamespaceEnv = "POD_NAMESPACE"

// ConfigMapStore keeps the Keycloak memory (gzip'd, keycloak.MaxState at
// most) in ConfigMaps of one namespace: StateConfigMap holds the first
// StateChunk bytes, the number of chunks and the digest of the whole; the
// rest go to StateConfigMap-1 and on, written before the first so that a
// reader never takes half a state for a whole one (a digest that does not
// match is a corrupt state, ignored with a warning). It needs get, create
// and update on those ConfigMaps.
type ConfigMapStore struct {
	// Client reaches the cluster; nil: opened from Kubeconfig at first use.
	Client     corev1client.ConfigMapsGetter
	Kubeconfig string
	// Namespace holds the ConfigMaps; "": POD_NAMESPACE, else the namespace
	// of the kubeconfig's context or of the in-cluster service account.
	Namespace string
	// chunks is how many chunks the last load or save found.
	chunks int
}

// String names the store in messages.
func (s *ConfigMapStore) String() string {
	return "keycloak state ConfigMap " + s.Namespace + "/" + StateConfigMap
}

func (s *ConfigMapStore) open() (corev1client.ConfigMapInterface, error) {
	src := kube.Source{Path: s.Kubeconfig}
	if s.Namespace == "" {
		s.Namespace = os.Getenv(podNamespaceEnv)
	}
	if s.Namespace == "" {
		ns, err := src.Namespace()
		if err != nil {
			return nil, err
		}
		s.Namespace = ns
	}
	if s.Client == nil {
		rc, err := src.RESTConfig()
		if err != nil {
			return nil, err
		}
		if s.Client, err = corev1client.NewForConfig(rc); err != nil {
			return nil, fmt.Errorf("client of %s: %w", src, err)
		}
	}
	return s.Client.ConfigMaps(s.Namespace), nil
}

func chunkName(i int) string {
	if i == 0 {
		return StateConfigMap
	}
	return StateConfigMap + "-" + strconv.Itoa(i)
}

// Load reads the chunks and checks the digest; no first ConfigMap is no state.
func (s *ConfigMapStore) Load(ctx context.Context) ([]byte, error) {
	cms, err := s.open()
	if err != nil {
		return nil, err
	}
	head, err := cms.Get(ctx, StateConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get ConfigMap %s/%s: %w", s.Namespace, StateConfigMap, err)
	}
	n, err := strconv.Atoi(head.Annotations[chunksAnn])
	if err != nil || n < 1 {
		return nil, fmt.Errorf("ConfigMap %s/%s: annotation %s is %q, not a count", s.Namespace, StateConfigMap, chunksAnn, head.Annotations[chunksAnn])
	}
	s.chunks = n
	var all bytes.Buffer
	all.Write(head.BinaryData[stateKey])
	for i := 1; i < n; i++ {
		cm, err := cms.Get(ctx, chunkName(i), metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("get ConfigMap %s/%s: %w", s.Namespace, chunkName(i), err)
		}
		all.Write(cm.BinaryData[stateKey])
	}
	sum := sha256.Sum256(all.Bytes())
	if hex.EncodeToString(sum[:]) != head.Annotations[digestAnn] {
		return nil, fmt.Errorf("ConfigMap %s/%s: the chunks do not match the digest (a write cut short?)", s.Namespace, StateConfigMap)
	}
	return all.Bytes(), nil
}

// Save writes the chunks after the first, then the first with the count and
// the digest; chunks a larger earlier state left are emptied.
func (s *ConfigMapStore) Save(ctx context.Context, data []byte) error {
	cms, err := s.open()
	if err != nil {
		return err
	}
	var parts [][]byte
	for len(data) > StateChunk {
		parts, data = append(parts, data[:StateChunk]), data[StateChunk:]
	}
	parts = append(parts, data)
	for i := 1; i < len(parts); i++ {
		if err := s.put(ctx, cms, i, parts[i], nil); err != nil {
			return err
		}
	}
	sum := sha256.Sum256(bytes.Join(parts, nil))
	ann := map[string]string{chunksAnn: strconv.Itoa(len(parts)), digestAnn: hex.EncodeToString(sum[:])}
	if err := s.put(ctx, cms, 0, parts[0], ann); err != nil {
		return err
	}
	for i := len(parts); i < s.chunks; i++ {
		if err := s.put(ctx, cms, i, nil, nil); err != nil {
			return err
		}
	}
	s.chunks = len(parts)
	return nil
}

// put creates or replaces chunk i.
func (s *ConfigMapStore) put(ctx context.Context, cms corev1client.ConfigMapInterface, i int, data []byte, ann map[string]string) error {
	name := chunkName(i)
	want := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace, Annotations: ann, Labels: map[string]string{
			"app.kubernetes.io/name": "waldur-gitops", "app.kubernetes.io/component": "keycloak-state",
		}},
		BinaryData: map[string][]byte{stateKey: data},
	}
	for attempt := 0; ; attempt++ {
		cur, err := cms.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = cms.Create(ctx, want, metav1.CreateOptions{})
		case err == nil:
			want.ResourceVersion = cur.ResourceVersion
			_, err = cms.Update(ctx, want, metav1.UpdateOptions{})
		}
		if (apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) && attempt == 0 {
			continue // another writer in between: the later write wins
		}
		if err != nil {
			return fmt.Errorf("write ConfigMap %s/%s: %w", s.Namespace, name, err)
		}
		return nil
	}
}
