package keycloaktest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/testproc"
)

// The bootstrap administrator every server has, in the master realm, who logs
// in with the public admin-cli client.
const (
	AdminUser   = "admin"
	AdminRealm  = "master"
	AdminClient = "admin-cli"
)

// URLEnv and PasswordEnv name the environment variables that make Shared use
// a Keycloak that is already running (its bootstrap admin "admin" in realm
// master, with that password) instead of starting one: handy when
// iterating on tests. The tests create realms of their own and delete them.
const (
	URLEnv      = "WALDUR_GITOPS_KEYCLOAK_URL"
	PasswordEnv = "WALDUR_GITOPS_KEYCLOAK_ADMIN_PASSWORD"
)

// Options configure a server.
type Options struct {
	// Log receives progress: download, build, start (nil: discarded).
	Log io.Writer
	// ReadyTimeout bounds the wait for readiness (default 5 minutes: a first
	// start on a loaded two-core machine has been seen to take over two).
	ReadyTimeout time.Duration
}

// Server is a running Keycloak.
type Server struct {
	// URL is the base URL, http://127.0.0.1:<port> (no /auth prefix).
	URL string
	// AdminPassword is the bootstrap admin's password, random per server. It
	// is never logged; keep it out of test output too.
	AdminPassword string
	// Dir holds the server's home (links into the cached distribution), its
	// data and its log; Stop removes it unless $WALDUR_GITOPS_KEYCLOAK_KEEP
	// is set.
	Dir string
	// Log is the path of the server's log.
	Log string

	cmd      *exec.Cmd
	external bool // not started here: Stop leaves it alone
	done     chan struct{}
	err      error
	once     sync.Once
}

// String describes the server without its password.
func (s *Server) String() string { return "Keycloak " + Version + " at " + s.URL }

// Start makes sure the distribution is there and built, and starts a server
// on free loopback ports. Call Stop when done.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 5 * time.Minute
	}
	d, err := EnsureDist(ctx, o.Log)
	if err != nil {
		return nil, err
	}
	return testproc.Retry(ctx, 3, func() (*Server, error) { return start(ctx, d, o) })
}

func start(ctx context.Context, d *Dist, o Options) (_ *Server, err error) {
	dir, err := os.MkdirTemp("", "waldur-gitops-keycloak-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, Log: filepath.Join(dir, "keycloak.log"), done: make(chan struct{})}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	home, err := instanceHome(dir, d.Home)
	if err != nil {
		return nil, err
	}
	ports, err := testproc.FreePorts(2)
	if err != nil {
		return nil, err
	}
	s.URL = "http://127.0.0.1:" + strconv.Itoa(ports[0])
	mgmt := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	argv, err := javaArgv(ctx, dir, home, d, "start", "--optimized",
		"--http-enabled=true", "--hostname-strict=false", "--http-host=127.0.0.1",
		"--http-port="+strconv.Itoa(ports[0]), "--http-management-port="+strconv.Itoa(ports[1]))
	if err != nil {
		return nil, err
	}
	pw := make([]byte, 18)
	if _, err := rand.Read(pw); err != nil {
		return nil, err
	}
	s.AdminPassword = hex.EncodeToString(pw)

	f, err := os.Create(s.Log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(d.Java.Home, "bin", "java"), argv...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(d.Java.env(), "KC_BOOTSTRAP_ADMIN_USERNAME="+AdminUser, "KC_BOOTSTRAP_ADMIN_PASSWORD="+s.AdminPassword)
	testproc.Detach(cmd)
	fmt.Fprintf(o.Log, "keycloaktest: starting Keycloak %s on %s (Java %d at %s; 10-60 s, longer on a loaded machine; log %s)\n",
		Version, s.URL, d.Java.Major, d.Java.Home, s.Log)
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start keycloak: %w", err)
	}
	s.cmd = cmd
	go func() {
		s.err = cmd.Wait()
		f.Close()
		close(s.done)
	}()
	if err := s.waitReady(ctx, []string{mgmt + "/health/ready", s.URL + "/realms/master"}, o.ReadyTimeout); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Log, "keycloaktest: Keycloak ready in %s\n", time.Since(begin).Round(time.Second))
	return s, nil
}

// instanceHome makes a Keycloak home of the server's own under dir: links to
// the distribution's directories and a data directory (transaction logs,
// temporary files) that no other server shares.
func instanceHome(dir, dist string) (string, error) {
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, "data"), 0o755); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(dist)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.Name() == "data" || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if err := os.Symlink(filepath.Join(dist, e.Name()), filepath.Join(home, e.Name())); err != nil {
			return "", err
		}
	}
	return home, nil
}

// javaArgv asks the distribution's kc.sh for the JVM command line of args
// (by giving it, as JAVA, a script that prints its arguments), so that the
// JVM can be started directly: kc.sh runs it as a child of a shell, where
// stopping the shell would not stop it. The home is pointed at the server's
// own, and the shell's pid dropped.
func javaArgv(ctx context.Context, dir, home string, d *Dist, args ...string) ([]string, error) {
	printer := filepath.Join(dir, "print-argv.sh")
	if err := os.WriteFile(printer, []byte("#!/bin/sh\nprintf '%s\\0' \"$@\"\n"), 0o755); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(d.Home, "bin", "kc.sh"), args...)
	cmd.Env = append(d.Java.env(), "JAVA="+printer)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kc.sh %s: %w: %s", strings.Join(args, " "), err, errOut.String())
	}
	var argv []string
	homeSet := false
	for _, a := range strings.Split(strings.TrimSuffix(out.String(), "\x00"), "\x00") {
		switch {
		case strings.HasPrefix(a, "-Dkc.script.pid="):
			continue
		case strings.HasPrefix(a, "-Dkc.home.dir="):
			a, homeSet = "-Dkc.home.dir="+home, true
		}
		argv = append(argv, a)
	}
	if !homeSet || len(argv) < len(args)+2 {
		return nil, fmt.Errorf("kc.sh %s printed no usable Java command line (%q); this Keycloak's kc.sh does not fit keycloaktest", strings.Join(args, " "), out.String())
	}
	return argv, nil
}

// waitReady polls urls until each answers 200, the JVM exits or the time is
// up. Keycloak reports ready on the management port before the master realm
// answers, so both are asked.
func (s *Server) waitReady(ctx context.Context, urls []string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		ok := true
		for _, u := range urls {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			resp, err := hc.Do(req)
			if err != nil {
				ok = false
				break
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-s.done:
			log := s.logTail()
			err := fmt.Errorf("keycloak exited while starting (%v); log %s ends:\n%s", s.err, s.Log, log)
			if strings.Contains(log, "Address already in use") || strings.Contains(log, "address already in use") {
				err = fmt.Errorf("%w: %w", testproc.ErrAddrInUse, err)
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("keycloak not ready at %s after %s; log %s ends:\n%s", s.URL, timeout, s.Log, s.logTail())
		case <-tick.C:
		}
	}
}

func (s *Server) logTail() string { return testproc.FileTail(s.Log, 4<<10) }

// Stop ends the JVM (SIGTERM, SIGKILL after 20 s) and removes the server's
// directory, unless $WALDUR_GITOPS_KEYCLOAK_KEEP is set, which keeps it for
// reading the log. Stop is safe to call more than once.
func (s *Server) Stop() {
	s.once.Do(func() {
		if s.external {
			return
		}
		if s.cmd != nil {
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.done:
			case <-time.After(20 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.done
			}
		}
		if os.Getenv("WALDUR_GITOPS_KEYCLOAK_KEEP") == "" {
			_ = os.RemoveAll(s.Dir)
		}
	})
}

// Shared is one Keycloak for the tests of a package, started by the first
// test that needs it and stopped by Main when the package's tests are done:
//
//	var kc keycloaktest.Shared
//	func TestMain(m *testing.M) { os.Exit(keycloaktest.Main(m, &kc)) }
//	func TestSomething(t *testing.T) { s := kc.Need(t); … }
//
// A run that selects no such test (-run, -bench, -short) starts nothing.
type Shared struct{ sh testproc.Shared[*Server] }

// Need returns the package's server, starting it on first use (testproc.Shared
// says what -short and a failed start do). Progress goes to standard error,
// so that a cold start is not two silent minutes. $WALDUR_GITOPS_KEYCLOAK_URL
// (URLEnv) names a server someone keeps running instead, for quick
// iterations.
func (s *Shared) Need(t testing.TB) *Server {
	t.Helper()
	return s.sh.Need(t, "Keycloak "+Version, func() (*Server, func(), error) {
		if u := os.Getenv(URLEnv); u != "" {
			pw := os.Getenv(PasswordEnv)
			if pw == "" {
				return nil, nil, fmt.Errorf("$%s is set but $%s, the password of its %s user in realm %s, is not", URLEnv, PasswordEnv, AdminUser, AdminRealm)
			}
			return &Server{URL: strings.TrimRight(u, "/"), AdminPassword: pw, external: true}, nil, nil
		}
		srv, err := Start(context.Background(), Options{Log: os.Stderr})
		if err != nil {
			return nil, nil, err
		}
		return srv, srv.Stop, nil
	})
}

// Main runs a test package's tests and stops sh's server, if one was
// started, before returning m.Run's exit code.
func Main(m *testing.M, sh *Shared) int {
	code := m.Run()
	sh.sh.Stop()
	return code
}
