package cli

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// Distinctive secrets, one per credential source.
const (
	secretWaldur   = "0123456789abcdef0123456789abcdef01234567" // serveExample's token
	secretKeycloak = "kcpw-S3CR3T-keycloak-24680"
	secretClient   = "kcsec-S3CR3T-client-13579"
	secretGit      = "gitpw-S3CR3T-git-97531"
	secretPush     = "pushpw-S3CR3T-gateway-11223"
	secretURL      = "urlpw-S3CR3T-userinfo-44556"
)

// echoServer answers every request with status and a body that repeats what
// it was sent: the headers (Authorization included) and the body, raw and
// URL-decoded, as a careless or hostile server would. It also keeps what
// was pushed to it, for the Pushgateway.
type echoServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newEcho(t *testing.T, status int) *echoServer {
	e := &echoServer{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		dec, _ := url.QueryUnescape(string(b))
		e.mu.Lock()
		e.bodies = append(e.bodies, string(b))
		e.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"detail": "auth=%q body=%q decoded=%q echo: %s %s"}`, r.Header.Get("Authorization"), b, dec, r.Method, r.URL)
	}))
	t.Cleanup(e.Close)
	return e
}

// forms are the ways a secret can leak: raw, URL-encoded, JSON-escaped, and
// inside a Basic header.
func forms(user, secret string) []string {
	return []string{secret, url.QueryEscape(secret), base64.StdEncoding.EncodeToString([]byte(user + ":" + secret)), secret[:len(secret)-3]}
}

// TestNoSecretIsEverPrinted runs the commands with a distinctive secret in
// every credential source, against servers that echo everything they are
// sent, on the success and the failure paths, and sweeps stdout, stderr, the
// run report file and what was pushed to the Pushgateway.
func TestNoSecretIsEverPrinted(t *testing.T) {
	// serveExample sets $WALDUR_API_TOKEN to secretWaldur.
	waldurOK, waldurCfg := serveExample(t, waldurtest.AllowPath("/api/users/me/"), waldurtest.AllowPath("/api/marketplace-provider-offerings/"))
	echoWaldur := newEcho(t, http.StatusBadRequest)
	echoKeycloak := newEcho(t, http.StatusUnauthorized)
	echoGit := newEcho(t, http.StatusForbidden)
	push := newEcho(t, http.StatusOK)
	gsrv, _, gitURL := gitRepo(t)

	dir := t.TempDir()
	t.Setenv("KC_PASSWORD", secretKeycloak)
	t.Setenv("KC_CLIENT_SECRET", secretClient)
	t.Setenv("GIT_PASSWORD_SWEEP", gsrv.Password())
	t.Setenv("GIT_PASSWORD_WRONG", secretGit)
	t.Setenv("PUSH_PASSWORD", secretPush)
	base := string(mustRead(t, waldurCfg))
	base = strings.Replace(base, "log_level: info\n", "log_level: debug\nreport: "+filepath.Join(dir, "report.json")+
		"\nmetrics:\n  pushgateway_url: "+push.URL+"\n  username: pusher\n  password_env: PUSH_PASSWORD\n", 1)

	type variant struct {
		name string
		cfg  string
		sync int // the exit code of sync: which path the variant takes
	}
	keycloakAt := func(text, kcURL string, client bool) string {
		lines := strings.Split(text, "\n")
		for i, l := range lines {
			if strings.Contains(l, "keycloak_url:") {
				ind := l[:len(l)-len(strings.TrimLeft(l, " "))]
				cred := ind + "keycloak_username: gitops\n" + ind + "keycloak_password_env: KC_PASSWORD"
				if client {
					cred = ind + "client_id: gitops\n" + ind + "client_secret_env: KC_CLIENT_SECRET"
				}
				lines[i] = ind + "keycloak_url: " + kcURL + "\n" + ind + "requests_per_second: 0\n" + ind + "max_retries: 1\n" + cred
			}
			if strings.Contains(l, "keycloak_username:") || strings.Contains(l, "keycloak_password:") {
				lines[i] = "#"
			}
		}
		return strings.Join(lines, "\n")
	}
	gitAt := func(text, u string) string {
		return strings.Replace(text, "  url: https://git.example.org/platform/tenants.git\n",
			"  url: "+u+"\n  username: "+gsrv.User()+"\n  password_env: GIT_PASSWORD_SWEEP\n", 1)
	}
	wrongGitPassword := func(text string) string {
		return strings.Replace(text, "password_env: GIT_PASSWORD_SWEEP", "password_env: GIT_PASSWORD_WRONG", 1)
	}
	variants := []variant{
		{"echoing Waldur", gitAt(keycloakAt(strings.ReplaceAll(base, "waldur_api_url: "+waldurOK.URL(), "waldur_api_url: "+echoWaldur.URL+"/api/"), echoKeycloak.URL, false), gitURL), ExitWaldur},
		{"echoing Keycloak, password", gitAt(keycloakAt(base, echoKeycloak.URL, false), gitURL), ExitKeycloak},
		{"echoing Keycloak, client secret", gitAt(keycloakAt(base, echoKeycloak.URL, true), gitURL), ExitKeycloak},
		{"echoing Git", gitAt(keycloakAt(base, echoKeycloak.URL, false), echoGit.URL+"/tenants.git"), ExitGit},
		{"Git refusing the password", wrongGitPassword(gitAt(keycloakAt(base, echoKeycloak.URL, false), gitURL)), ExitGit},
		{"user info in the Waldur URL", strings.ReplaceAll(base, "waldur_api_url: "+waldurOK.URL(), "waldur_api_url: "+strings.Replace(waldurOK.URL(), "http://", "http://admin:"+secretURL+"@", 1)), ExitUsage},
	}
	commands := [][]string{
		{"sync"}, {"sync", "--dry-run"}, {"render", "--dry-run", "-o", "json"}, {"keycloak"}, {"keycloak", "--dry-run"},
		{"report", "--dry-run"}, {"diagnose"}, {"diagnose", "-o", "json"}, {"snapshot", "--out", filepath.Join(dir, "snap.json")},
	}
	secrets := map[string][]string{}
	for user, s := range map[string]string{"": secretWaldur, "gitops": secretClient, gsrv.User(): secretGit, "pusher": secretPush, "admin": secretURL, "git": gsrv.Password()} {
		secrets[s] = forms(user, s)
	}
	secrets[secretKeycloak] = forms("gitops", secretKeycloak)
	for _, v := range variants {
		cfg := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(cfg, []byte(v.cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range commands {
			t.Run(v.name+"/"+strings.Join(args, " "), func(t *testing.T) {
				os.Remove(filepath.Join(dir, "report.json"))
				code, stdout, stderr := run(t, append(args, "--config", cfg)...)
				report, _ := os.ReadFile(filepath.Join(dir, "report.json"))
				push.mu.Lock()
				pushed := strings.Join(push.bodies, "\n")
				push.bodies = nil
				push.mu.Unlock()
				if args[0] == "sync" && len(args) == 1 && code != v.sync {
					t.Errorf("sync exits %d, want %d: the variant does not take its path\n%.2000s", code, v.sync, stderr)
				}
				for where, text := range map[string]string{"stdout": stdout, "stderr": stderr, "report file": string(report), "metrics": pushed} {
					for s, fs := range secrets {
						for _, f := range fs {
							if strings.Contains(text, f) {
								t.Errorf("exit %d: %s shows %q (a form of %s)", code, where, f, s)
							}
						}
					}
				}
			})
		}
	}
}
