package kubetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"github.com/waldur/waldur-gitops/internal/testenv/testproc"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// Admin is the user every cluster has: in group system:masters, so RBAC lets
// it do anything.
const Admin = "admin"

// Options configure a cluster.
type Options struct {
	// Users are extra users, each with its own bearer token and no group but
	// system:authenticated: RBAC gives them nothing until a test binds them.
	Users []string
	// Log receives build progress (nil: discarded).
	Log io.Writer
	// ReadyTimeout bounds the wait for the API server (default 3 minutes; a
	// loaded machine is slow, an idle one takes about 3 s).
	ReadyTimeout time.Duration
	// ControllerManager also runs kube-controller-manager with the controllers
	// for resource quota status, namespace deletion, garbage collection, service
	// accounts and their tokens (ControllerManagerControllers). Without it the
	// API server refuses a Pod in a namespace with a ResourceQuota (the quota's
	// status is never filled) and a deleted namespace stays Terminating.
	ControllerManager bool
}

// ControllerManagerControllers are the controllers Options.ControllerManager runs.
var ControllerManagerControllers = []string{
	"resourcequota-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"garbage-collector-controller",
}

// Cluster is a running etcd and kube-apiserver.
type Cluster struct {
	// URL is the API server's address, https://127.0.0.1:<port>.
	URL string
	// CA is the PEM certificate that signed the serving certificate.
	CA []byte
	// Dir holds the data, certificates, logs and kubeconfigs; Stop removes it.
	Dir string

	tokens map[string]string
	procs  []*testproc.Process
	once   sync.Once
}

// Start builds the binaries if needed and starts a cluster on free loopback
// ports. Call Stop when done.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	ensure := EnsureBinaries
	if o.ControllerManager {
		ensure = EnsureBinariesWithControllerManager
	}
	bins, err := ensure(ctx, o.Log)
	if err != nil {
		return nil, err
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 3 * time.Minute
	}
	return testproc.Retry(ctx, 3, func() (*Cluster, error) { return start(ctx, bins, o) })
}

// StartForTest starts a cluster for t, which -short skips, and stops it
// when t ends; a cluster that cannot start fails t.
func StartForTest(t testing.TB, o Options) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a real kube-apiserver; skipped with -short")
	}
	c, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

func start(ctx context.Context, bins *Binaries, o Options) (_ *Cluster, err error) {
	dir, err := os.MkdirTemp("", "waldur-gitops-kube-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, tokens: map[string]string{}}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	ports, err := testproc.FreePorts(3)
	if err != nil {
		return nil, err
	}
	etcdPort, peerPort, apiPort := ports[0], ports[1], ports[2]
	if err := c.writePKI(append([]string{Admin}, o.Users...)); err != nil {
		return nil, err
	}

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	etcd, err := c.run("etcd", bins.Etcd,
		"--name=test",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=test="+peerURL,
		"--unsafe-no-fsync", // throwaway data
		"--log-level=warn",
	)
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, etcd, &http.Client{Timeout: 2 * time.Second}, etcdURL+"/health", "", 30*time.Second); err != nil {
		return nil, err
	}

	c.URL = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	pki := filepath.Join(dir, "pki")
	api, err := c.run("kube-apiserver", bins.KubeAPIServer,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(apiPort),
		"--cert-dir="+pki,
		"--tls-cert-file="+filepath.Join(pki, "serving.crt"),
		"--tls-private-key-file="+filepath.Join(pki, "serving.key"),
		"--token-auth-file="+filepath.Join(pki, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-key-file="+filepath.Join(pki, "sa.key"),
		"--service-account-signing-key-file="+filepath.Join(pki, "sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--api-audiences=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--profiling=false",
	)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.CA)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	if err := waitReady(ctx, api, hc, c.URL+"/readyz", c.tokens[Admin], o.ReadyTimeout); err != nil {
		return nil, err
	}
	for user := range c.tokens {
		if err := os.WriteFile(c.KubeconfigPath(user), c.kubeconfig(user), 0o600); err != nil {
			return nil, err
		}
	}
	if o.ControllerManager {
		if err := c.startControllerManager(ctx, bins, hc, o.ReadyTimeout); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// startControllerManager runs kube-controller-manager as admin and waits until
// it works: the service account controller has made the default namespace's
// ServiceAccount "default". It serves no port (--secure-port=0).
func (c *Cluster) startControllerManager(ctx context.Context, bins *Binaries, hc *http.Client, timeout time.Duration) error {
	kc := c.KubeconfigPath(Admin)
	pki := filepath.Join(c.Dir, "pki")
	kcm, err := c.run("kube-controller-manager", bins.KubeControllerManager,
		"--kubeconfig="+kc,
		"--authentication-kubeconfig="+kc,
		"--authorization-kubeconfig="+kc,
		"--authentication-skip-lookup=true",
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--leader-elect=false",
		"--controllers="+strings.Join(ControllerManagerControllers, ","),
		"--service-account-private-key-file="+filepath.Join(pki, "sa.key"),
		"--root-ca-file="+filepath.Join(pki, "ca.crt"),
		"--use-service-account-credentials=false",
		"--profiling=false",
	)
	if err != nil {
		return err
	}
	return waitReady(ctx, kcm, hc, c.URL+"/api/v1/namespaces/default/serviceaccounts/default", c.tokens[Admin], timeout)
}

// run starts a child with its output in <dir>/<name>.log.
func (c *Cluster) run(name, bin string, args ...string) (*testproc.Process, error) {
	p, err := testproc.Start(name, bin, c.Dir, filepath.Join(c.Dir, name+".log"), nil, args...)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// waitReady polls url until it answers 200, the process exits or the time is up.
func waitReady(ctx context.Context, p *testproc.Process, hc *http.Client, url, token string, timeout time.Duration) error {
	return p.WaitReady(ctx, url, timeout, testproc.HTTPOK(hc, url, token))
}

// Stop ends the processes (they hold nothing worth a graceful shutdown) and
// removes the cluster's directory, unless $WALDUR_GITOPS_KUBE_KEEP is set,
// which keeps it for reading the logs. Stop is safe to call more than once.
func (c *Cluster) Stop() {
	c.once.Do(func() {
		testproc.KillAll(c.procs)
		if os.Getenv("WALDUR_GITOPS_KUBE_KEEP") == "" {
			_ = os.RemoveAll(c.Dir)
		}
	})
}

// Token returns a user's bearer token.
func (c *Cluster) Token(user string) string { return c.tokens[user] }

// RESTConfig returns a client config that authenticates as user.
func (c *Cluster) RESTConfig(user string) *rest.Config {
	return &rest.Config{
		Host:            c.URL,
		BearerToken:     c.tokens[user],
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CA},
		QPS:             -1, // no client-side throttling against a test server
	}
}

// KubeconfigPath is the kubeconfig file that authenticates as user.
func (c *Cluster) KubeconfigPath(user string) string {
	return filepath.Join(c.Dir, "kubeconfig-"+user)
}

func (c *Cluster) kubeconfig(user string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: test
  context:
    cluster: test
    user: %s
current-context: test
`, c.URL, base64.StdEncoding.EncodeToString(c.CA), user, c.tokens[user], user))
}

// writePKI writes a CA, a serving certificate for 127.0.0.1 signed by it, the
// service-account signing key and the token file.
func (c *Cluster) writePKI(users []string) error {
	pki := filepath.Join(c.Dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "waldur-gitops test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	c.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	files := map[string][]byte{
		"ca.crt":      c.CA,
		"serving.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}),
	}
	for name, key := range map[string]*ecdsa.PrivateKey{"serving.key": srvKey, "sa.key": saKey} {
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		files[name] = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	}
	var csv strings.Builder
	for _, u := range users {
		if _, dup := c.tokens[u]; dup || u == "" || strings.ContainsAny(u, ",\"\n") {
			return fmt.Errorf("kubetest: bad or repeated user name %q", u)
		}
		tok := make([]byte, 16)
		if _, err := rand.Read(tok); err != nil {
			return err
		}
		c.tokens[u] = hex.EncodeToString(tok)
		// token,user,uid[,"group1,group2"]
		fmt.Fprintf(&csv, "%s,%s,%s", c.tokens[u], u, u+"-uid")
		if u == Admin {
			csv.WriteString(`,"system:masters"`)
		}
		csv.WriteString("\n")
	}
	files["tokens.csv"] = []byte(csv.String())
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(pki, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
