// Package rabbittest runs a real RabbitMQ broker on loopback for the tests of
// Waldur's event delivery (STOMP over WebSocket): Debian's rabbitmq-server,
// installed with apt-get when it is missing (Install), never its system
// service. A broker runs from a scratch directory of its own with its own node
// name, its own epmd on a port of its own, and free loopback ports for AMQP,
// STOMP, web-STOMP (at WSPath, the path Waldur's nginx serves) and the
// management API, which creates vhosts, users and queues the way Waldur's
// register_queue does (Provision) and reads consumers and message counts.
//
// A test package shares one broker (Shared, Main), like the kube-apiserver of
// internal/testenv/kubetest; make test installs the package first with
// `go run ./internal/testenv/rabbittest/prepare`.
package rabbittest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/apt"
	"github.com/waldur/waldur-gitops/internal/testenv/testproc"
)

// WSPath is the web-STOMP path, as Waldur serves it.
const WSPath = "/rmqws-stomp"

// Queue arguments of a queue Waldur declares for an agent (register_queue):
// messages live an hour, at most 10,000 wait.
const (
	QueueTTLMillis = 3600000
	QueueMaxLength = 10000
)

var plugins = []string{"rabbitmq_management", "rabbitmq_stomp", "rabbitmq_web_stomp"}

// serverScripts are where Debian puts the broker's start script.
var serverScripts = []string{"/usr/lib/rabbitmq/bin/rabbitmq-server"}

// findServer returns the start script, or "" when the broker is not installed.
func findServer() string {
	if p := os.Getenv("RABBITMQ_SERVER_SCRIPT"); p != "" {
		return p
	}
	for _, p := range serverScripts {
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p
		}
	}
	m, _ := filepath.Glob("/usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/rabbitmq-server")
	if len(m) > 0 {
		return m[len(m)-1]
	}
	return ""
}

func findEpmd() string {
	for _, p := range []string{"/usr/bin/epmd", "/usr/lib/erlang/bin/epmd"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, _ := exec.LookPath("epmd")
	return p
}

// Install makes sure Debian's rabbitmq-server is installed: when it is not,
// and the process runs as root, it runs apt-get install (progress to log). It
// never starts the system service.
func Install(ctx context.Context, log io.Writer) error {
	return apt.Install(ctx, log, "rabbittest", "rabbitmq-server", func() bool { return findServer() != "" && findEpmd() != "" })
}

// Ports are the loopback ports of a broker.
type Ports struct {
	AMQP, STOMP, WebSTOMP, Management, Dist, Epmd int
}

// Broker is one RabbitMQ node. Its ports, node name and administrator stay
// the same across Restart, so users, vhosts and durable queues survive.
type Broker struct {
	Dir           string
	Ports         Ports
	Node          string
	AdminUser     string
	AdminPassword string

	mu     sync.Mutex
	server *exec.Cmd
	exited chan struct{}
	epmd   *exec.Cmd
	log    io.Writer
	pub    *Publisher
}

// Start installs nothing (see Install); it starts a broker in dir and waits
// until STOMP, web-STOMP and management answer. log gets progress lines.
func Start(ctx context.Context, dir string, log io.Writer) (*Broker, error) {
	if findServer() == "" || findEpmd() == "" {
		return nil, errors.New("rabbitmq-server is not installed (go run ./internal/testenv/rabbittest/prepare, or apt-get install -y rabbitmq-server)")
	}
	if log == nil {
		log = io.Discard
	}
	var b *Broker
	var err error
	for range 3 {
		b, err = start(ctx, dir, log)
		if err == nil || !errors.Is(err, testproc.ErrAddrInUse) {
			break
		}
	}
	return b, err
}

func start(ctx context.Context, dir string, log io.Writer) (*Broker, error) {
	p, err := testproc.FreePorts(6)
	if err != nil {
		return nil, err
	}
	b := &Broker{Dir: dir, Ports: Ports{AMQP: p[0], STOMP: p[1], WebSTOMP: p[2], Management: p[3], Dist: p[4], Epmd: p[5]},
		Node: "wgtest" + token(4) + "@localhost", AdminUser: "wgtest-admin", AdminPassword: token(16), log: log}
	if err := b.writeFiles(); err != nil {
		return nil, err
	}
	if err := b.startEpmd(ctx); err != nil {
		return nil, err
	}
	if err := b.startServer(ctx); err != nil {
		b.Stop()
		return nil, err
	}
	return b, nil
}

func token(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (b *Broker) writeFiles() error {
	for _, d := range []string{"log", "mnesia"} {
		if err := os.MkdirAll(filepath.Join(b.Dir, d), 0o755); err != nil {
			return err
		}
	}
	conf := strings.Join([]string{
		fmt.Sprintf("listeners.tcp.1 = 127.0.0.1:%d", b.Ports.AMQP),
		fmt.Sprintf("stomp.listeners.tcp.1 = 127.0.0.1:%d", b.Ports.STOMP),
		"web_stomp.tcp.ip = 127.0.0.1",
		fmt.Sprintf("web_stomp.tcp.port = %d", b.Ports.WebSTOMP),
		"web_stomp.ws_path = " + WSPath,
		"management.tcp.ip = 127.0.0.1",
		fmt.Sprintf("management.tcp.port = %d", b.Ports.Management),
		"default_user = " + b.AdminUser,
		"default_pass = " + b.AdminPassword,
		"default_vhost = /",
		"default_user_tags.administrator = true",
		"default_permissions.configure = .*",
		"default_permissions.read = .*",
		"default_permissions.write = .*",
		"loopback_users = none",
		"collect_statistics_interval = 500",
		"management.rates_mode = none",
		"disk_free_limit.absolute = 50MB",
		"log.console = false",
		"log.file = " + filepath.Join(b.Dir, "log", "rabbit.log"),
		"log.file.level = info",
	}, "\n") + "\n"
	files := map[string]string{
		"rabbitmq.conf":     conf,
		"enabled_plugins":   "[" + strings.Join(plugins, ",") + "].\n",
		"advanced.config":   "[].\n",
		"rabbitmq-env.conf": "# empty: the system's rabbitmq-env.conf is not read\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(b.Dir, name), []byte(text), 0o600); err != nil {
			return err
		}
	}
	return nil
}

func (b *Broker) env() []string {
	var e []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RABBITMQ_") && !strings.HasPrefix(kv, "ERL_") && !strings.HasPrefix(kv, "HOME=") {
			e = append(e, kv)
		}
	}
	loop := "-kernel inet_dist_use_interface {127,0,0,1} -start_epmd false"
	d := b.Dir
	return append(e,
		"HOME="+d,
		"RABBITMQ_NODENAME="+b.Node,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(b.Ports.AMQP),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(b.Ports.Dist),
		"ERL_EPMD_PORT="+strconv.Itoa(b.Ports.Epmd),
		"ERL_EPMD_ADDRESS=127.0.0.1",
		"RABBITMQ_MNESIA_BASE="+filepath.Join(d, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(d, "log"),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(d, "rabbitmq.conf"),
		"RABBITMQ_ADVANCED_CONFIG_FILE="+filepath.Join(d, "advanced.config"),
		"RABBITMQ_CONF_ENV_FILE="+filepath.Join(d, "rabbitmq-env.conf"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(d, "enabled_plugins"),
		"RABBITMQ_PLUGINS_EXPAND_DIR="+filepath.Join(d, "plugins-expand"),
		"RABBITMQ_PID_FILE="+filepath.Join(d, "rabbit.pid"),
		"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="+loop,
		"RABBITMQ_CTL_ERL_ARGS="+loop,
		"RABBITMQ_LOGS="+filepath.Join(d, "log", "rabbit.log"),
	)
}

func (b *Broker) startEpmd(ctx context.Context) error {
	f, err := os.OpenFile(filepath.Join(b.Dir, "log", "epmd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(findEpmd(), "-port", strconv.Itoa(b.Ports.Epmd), "-address", "127.0.0.1")
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	testproc.Detach(cmd)
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start epmd: %w", err)
	}
	f.Close()
	b.epmd = cmd
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("epmd on port %d exited at once: %w", b.Ports.Epmd, testproc.ErrAddrInUse)
		default:
		}
		if tcpOpen(b.Ports.Epmd) {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("epmd did not listen on port %d", b.Ports.Epmd)
}

func tcpOpen(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 300*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func (b *Broker) startServer(ctx context.Context) error {
	f, err := os.OpenFile(filepath.Join(b.Dir, "log", "server.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(findServer())
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = b.Dir, b.env(), f, f
	// Its own process group, so that Stop reaches the Erlang VM too; SIGTERM
	// to the start script when the test process dies stops the node cleanly.
	testproc.DetachGroup(cmd)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start rabbitmq-server: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	b.mu.Lock()
	b.server, b.exited = cmd, exited
	b.mu.Unlock()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			tail := b.logTail()
			if strings.Contains(tail, "eaddrinuse") {
				return fmt.Errorf("rabbitmq-server: %w: %s", testproc.ErrAddrInUse, tail)
			}
			return fmt.Errorf("rabbitmq-server exited during start: %s", tail)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if tcpOpen(b.Ports.STOMP) && tcpOpen(b.Ports.WebSTOMP) && tcpOpen(b.Ports.Management) {
			if _, err := b.api(ctx, http.MethodGet, "/api/overview", nil); err == nil {
				fmt.Fprintf(b.log, "rabbittest: RabbitMQ %s ready in %s (web-STOMP ws://127.0.0.1:%d%s)\n",
					b.Node, time.Since(t0).Round(100*time.Millisecond), b.Ports.WebSTOMP, WSPath)
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("rabbitmq did not become ready within 3 minutes: %s", b.logTail())
}

func (b *Broker) logTail() string {
	var parts []string
	for _, n := range []string{"server.out", "rabbit.log"} {
		if data := testproc.FileTail(filepath.Join(b.Dir, "log", n), 2000); data != "" {
			parts = append(parts, n+": "+data)
		}
	}
	return strings.Join(parts, "\n")
}

// StopServer stops the node (epmd stays, so Restart can start it again) and
// waits until its ports are free.
func (b *Broker) StopServer() {
	b.mu.Lock()
	cmd, exited := b.server, b.exited
	b.server = nil
	b.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(45 * time.Second):
	}
	// Whatever is left of the group the start script leads.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && (tcpOpen(b.Ports.STOMP) || tcpOpen(b.Ports.WebSTOMP) || tcpOpen(b.Ports.Management)) {
		time.Sleep(100 * time.Millisecond)
	}
}

// Restart stops the node and starts it again on the same ports, with the
// same users, vhosts and durable queues.
func (b *Broker) Restart(ctx context.Context) error {
	b.StopServer()
	return b.startServer(ctx)
}

// Stop stops the node and its epmd.
func (b *Broker) Stop() {
	b.mu.Lock()
	if b.pub != nil {
		b.pub.Close()
	}
	b.mu.Unlock()
	b.StopServer()
	if b.epmd != nil && b.epmd.Process != nil {
		_ = b.epmd.Process.Kill()
		b.epmd = nil
	}
}

// WebSTOMPURL is the web-STOMP endpoint.
func (b *Broker) WebSTOMPURL() string {
	return fmt.Sprintf("ws://127.0.0.1:%d%s", b.Ports.WebSTOMP, WSPath)
}

// STOMPAddr is the plain STOMP listener, host:port.
func (b *Broker) STOMPAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Ports.STOMP))
}

// api calls the management API as the administrator.
func (b *Broker) api(ctx context.Context, method, path string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(data)
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, fmt.Sprintf("http://127.0.0.1:%d%s", b.Ports.Management, path), rd)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(b.AdminUser, b.AdminPassword)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return data, &APIError{Method: method, Path: path, Status: resp.StatusCode, Body: strings.TrimSpace(string(data))}
	}
	return data, nil
}

// APIError is a management API answer other than 2xx.
type APIError struct {
	Method, Path string
	Status       int
	Body         string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("rabbitmq management %s %s: %d %s", e.Method, e.Path, e.Status, e.Body)
}

// Provision creates what Waldur's register_queue creates: the vhost, the
// user with password (Waldur: the agent's API token) and full permissions
// on the vhost, and the durable queue with a one-hour message TTL and at most
// QueueMaxLength messages. It is idempotent.
func (b *Broker) Provision(ctx context.Context, vhost, user, password, queue string) error {
	v := url.PathEscape(vhost)
	if _, err := b.api(ctx, http.MethodPut, "/api/vhosts/"+v, map[string]any{}); err != nil {
		return fmt.Errorf("create vhost %s: %w", vhost, err)
	}
	// The administrator publishes like Mastermind does.
	for _, u := range []string{user, b.AdminUser} {
		if u == user {
			if _, err := b.api(ctx, http.MethodPut, "/api/users/"+url.PathEscape(u), map[string]any{"password": password, "tags": ""}); err != nil {
				return fmt.Errorf("create user %s: %w", u, err)
			}
		}
		if _, err := b.api(ctx, http.MethodPut, "/api/permissions/"+v+"/"+url.PathEscape(u),
			map[string]string{"configure": ".*", "write": ".*", "read": ".*"}); err != nil {
			return fmt.Errorf("permissions of %s on %s: %w", u, vhost, err)
		}
	}
	return b.DeclareQueue(ctx, vhost, queue)
}

// DeclareQueue declares the durable queue with Waldur's arguments.
func (b *Broker) DeclareQueue(ctx context.Context, vhost, queue string) error {
	_, err := b.api(ctx, http.MethodPut, "/api/queues/"+url.PathEscape(vhost)+"/"+url.PathEscape(queue), map[string]any{
		"durable": true, "auto_delete": false,
		"arguments": map[string]any{"x-message-ttl": QueueTTLMillis, "x-max-length": QueueMaxLength},
	})
	if err != nil {
		return fmt.Errorf("declare queue %s on %s: %w", queue, vhost, err)
	}
	return nil
}

// DeleteQueue deletes a queue (consumers get an ERROR frame).
func (b *Broker) DeleteQueue(ctx context.Context, vhost, queue string) error {
	_, err := b.api(ctx, http.MethodDelete, "/api/queues/"+url.PathEscape(vhost)+"/"+url.PathEscape(queue), nil)
	if err != nil {
		return fmt.Errorf("delete queue %s on %s: %w", queue, vhost, err)
	}
	return nil
}

// QueueInfo is what the management API tells of a queue.
type QueueInfo struct {
	Messages  int `json:"messages"`
	Consumers int `json:"consumers"`
}

// Queue reads a queue's message and consumer counts; an *APIError with
// Status 404 when it does not exist.
func (b *Broker) Queue(ctx context.Context, vhost, queue string) (QueueInfo, error) {
	var q QueueInfo
	data, err := b.api(ctx, http.MethodGet, "/api/queues/"+url.PathEscape(vhost)+"/"+url.PathEscape(queue), nil)
	if err != nil {
		return q, err
	}
	err = json.Unmarshal(data, &q)
	return q, err
}

// Shared is one broker for the tests of a package, started by the first test
// that needs it and stopped by Main:
//
//	var rmq rabbittest.Shared
//	func TestMain(m *testing.M) { os.Exit(rabbittest.Main(m, &rmq)) }
//	func TestSomething(t *testing.T) { b := rmq.Need(t); … }
type Shared struct{ sh testproc.Shared[*Broker] }

// Need returns the package's broker, starting it on first use (installing
// the Debian package first when missing and root); testproc.Shared says what
// -short and a failed start do.
func (s *Shared) Need(t testing.TB) *Broker {
	t.Helper()
	return s.sh.Need(t, "RabbitMQ", func() (*Broker, func(), error) {
		ctx := context.Background()
		if err := Install(ctx, os.Stderr); err != nil {
			return nil, nil, err
		}
		dir, err := os.MkdirTemp("", "rabbittest-")
		if err != nil {
			return nil, nil, err
		}
		b, err := Start(ctx, dir, os.Stderr)
		if err != nil {
			return nil, func() { _ = os.RemoveAll(dir) }, err
		}
		return b, func() { b.Stop(); _ = os.RemoveAll(dir) }, nil
	})
}

// Main runs the package's tests, then stops the broker if one was started
// and removes its directory.
func Main(m *testing.M, sh *Shared) int {
	code := m.Run()
	sh.sh.Stop()
	return code
}
