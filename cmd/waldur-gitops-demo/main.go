// Command waldur-gitops-demo shows the whole waldur-gitops loop on the bundled
// example, offline, in one command (make demo): it starts the in-repo Waldur
// test server (waldur/waldurtest) and Keycloak fake (keycloak/kctest) on
// loopback and a local bare Git repository, loads examples/snapshot.json into
// the fake Waldur, and runs the real CLI (cli.Main) in-process:
//
//  1. sync: the commit, the Keycloak groups created and the orders turning done;
//  2. a limit changes and a Create order arrives in Waldur: render --dry-run
//     shows the diff, and a second sync commits it and finishes the order.
//
// It needs no external service and no credentials, asks nothing, and exits 0
// when every step did what it should. With -keep the servers stay up after the
// last step and the program prints how to poke them by hand, until Ctrl-C.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/waldur/waldur-gitops/cli"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// The demo's secrets: they exist only in this process and its fakes.
const (
	// keycloakPasswordEnv holds the fake Keycloak's admin password for the CLI.
	keycloakPasswordEnv = "WALDUR_GITOPS_DEMO_KEYCLOAK_PASSWORD"
	// keycloakPassword is the fake Keycloak admin's password in the demo.
	keycloakPassword = "demo-keycloak-password"
	// demoToken is the token the fake Waldur accepts.
	demoToken = "d3m0d3m0d3m0d3m0d3m0d3m0d3m0d3m0d3m0d3m0"
)

// The example's resource whose limit the demo raises, and the offering and
// project the new resource is ordered in.
const (
	changedResource = "3cfe5210e4db306c7aabcd8103b2ad22" // Genomics pipeline, UT namespaces
	changedLimit    = "cpu"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the demo's flags.
type options struct {
	examples string
	dir      string
	keep     bool
}

// run runs the demo and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("waldur-gitops-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.examples, "examples", "examples", "the directory of the bundled example (config.yaml, snapshot.json, site-templates)")
	fs.StringVar(&o.dir, "dir", "", "work directory for the Git repository and the config (default: a new temporary directory, removed at the end unless -keep)")
	fs.BoolVar(&o.keep, "keep", false, "keep the servers running after the demo and print how to use them by hand (Ctrl-C ends)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := demo(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "demo failed: %v\n", err)
		return 1
	}
	return 0
}

// env is what the demo started.
type env struct {
	out      io.Writer
	stderr   io.Writer
	dir      string
	repo     string
	config   string
	waldur   *waldurtest.Server
	keycloak *kctest.Server
	snapshot *waldur.Snapshot
	realms   []string
	// newOrder is the order the demo places in its second step.
	newOrder waldur.UUID
}

func demo(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if _, err := exec.LookPath("git"); err != nil {
		return fmt.Errorf("the demo shows the commits with the git command: %w", err)
	}
	dir := o.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "waldur-gitops-demo-")
		if err != nil {
			return fmt.Errorf("work directory: %w", err)
		}
		dir = d
		if !o.keep {
			defer os.RemoveAll(d)
		}
	}
	e, err := setUp(o.examples, dir, stdout, stderr)
	if err != nil {
		return err
	}
	defer e.waldur.Close()
	defer e.keycloak.Close()

	if err := e.firstSync(); err != nil {
		return err
	}
	if err := e.change(); err != nil {
		return err
	}
	if err := e.secondSync(); err != nil {
		return err
	}
	e.say("\nDone: Waldur → Git → Keycloak → Waldur orders, twice, without leaving this machine.")
	if o.keep {
		e.printManual()
		<-ctx.Done()
		e.say("\nstopping the servers")
	}
	return nil
}

// setUp starts the fakes and the repository and writes the demo's config.
func setUp(examples, dir string, stdout, stderr io.Writer) (*env, error) {
	e := &env{out: stdout, stderr: stderr, dir: dir, repo: filepath.Join(dir, "tenants.git")}
	snap, err := waldur.LoadSnapshot(filepath.Join(examples, "snapshot.json"))
	if err != nil {
		return nil, fmt.Errorf("the example snapshot: %w", err)
	}
	e.snapshot = snap
	if out, err := exec.Command("git", "init", "--quiet", "--bare", "--initial-branch=main", e.repo).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git init --bare %s: %w: %s", e.repo, err, out)
	}
	e.waldur, err = waldurtest.Start(stderr, waldurtest.WithToken(demoToken),
		waldurtest.AllowPath("/api/users/me/"), waldurtest.AllowPath("/api/marketplace-provider-offerings/"))
	if err != nil {
		return nil, fmt.Errorf("start the Waldur test server: %w", err)
	}
	e.waldur.Seed(&snap.State)
	e.keycloak = kctest.NewServer()
	e.keycloak.AddAdmin(kctest.AdminRealm, kctest.AdminUser, keycloakPassword)
	if e.config, err = writeConfig(examples, dir, e.repo, e.waldur.URL(), e.keycloak.URL); err != nil {
		return nil, err
	}
	l, err := config.Load(e.config)
	if err != nil {
		return nil, fmt.Errorf("the demo config: %w", err)
	}
	seedOfferings(e.waldur, l.Config)
	if e.realms, err = seedKeycloak(e.keycloak, l.Config, &snap.State); err != nil {
		return nil, err
	}
	// The CLI reads the secrets from the environment, as in a deployment.
	os.Setenv(config.TokenEnv, demoToken)
	os.Setenv(keycloakPasswordEnv, keycloakPassword)

	e.say("waldur-gitops demo: everything below runs on this machine.")
	e.say("  Waldur (test server)   %s/api/   token in $%s", e.waldur.URL(), config.TokenEnv)
	e.say("  Keycloak (fake)        %s   user %s in realm master, password in $%s", e.keycloak.URL, kctest.AdminUser, keycloakPasswordEnv)
	e.say("  GitOps repository      %s (bare)", e.repo)
	e.say("  config                 %s (examples/config.yaml pointed at the above)", e.config)
	return e, nil
}

// writeConfig copies the example config, pointed at the fakes and the local
// repository, into dir.
func writeConfig(examples, dir, repo, waldurURL, keycloakURL string) (string, error) {
	b, err := os.ReadFile(filepath.Join(examples, "config.yaml"))
	if err != nil {
		return "", fmt.Errorf("the example config: %w", err)
	}
	templates, err := filepath.Abs(filepath.Join(examples, "site-templates"))
	if err != nil {
		return "", err
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		ind := l[:len(l)-len(strings.TrimLeft(l, " "))]
		switch key := strings.TrimSpace(strings.SplitN(l, ":", 2)[0]); key {
		case "waldur_api_token_file", "keycloak_username", "keycloak_password":
			continue
		case "waldur_api_url":
			l = ind + "waldur_api_url: " + waldurURL + "/api/"
		case "url":
			if strings.Contains(l, "git.example.org") {
				l = ind + "url: file://" + repo
			}
		case "keycloak_url":
			l = ind + "keycloak_url: " + keycloakURL + "\n" + ind + "keycloak_username: " + kctest.AdminUser +
				"\n" + ind + "keycloak_password_env: " + keycloakPasswordEnv
		case "templates_dir":
			l = ind + "templates_dir: " + templates
		}
		lines = append(lines, l)
	}
	text := regexp.MustCompile(`(?m)^# .*\n`).ReplaceAllString(strings.Join(lines, "\n"), "")
	text = "# The bundled example, pointed at the demo's servers by waldur-gitops-demo.\n" + text
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return "", fmt.Errorf("write the demo config: %w", err)
	}
	return path, nil
}

// seedOfferings gives the Waldur test server the provider's user and every
// offering of the config with its components, for diagnose.
func seedOfferings(srv *waldurtest.Server, cfg *config.Config) {
	srv.SetCurrentUser(waldur.User{Username: "demo-provider", FullName: "Demo service provider"})
	for _, o := range cfg.Offerings {
		off := waldur.ProviderOffering{UUID: waldur.UUID(o.WaldurOfferingUUID), Name: o.Name, Type: "Marketplace.Basic"}
		keys := make([]string, 0, len(o.BackendComponents))
		for k := range o.BackendComponents {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			c := o.BackendComponents[k]
			off.Components = append(off.Components, waldur.OfferingComponent{Type: k, Name: c.Label, MeasuredUnit: c.MeasuredUnit, BillingType: c.AccountingType})
		}
		srv.AddOffering(off)
	}
}

// seedKeycloak creates, in the fake, the realms of the config and every team
// member the example renders into a group, and returns the realms.
func seedKeycloak(kc *kctest.Server, l *config.Config, st *waldur.State) ([]string, error) {
	tpls, err := render.LoadTemplates(l)
	if err != nil {
		return nil, fmt.Errorf("the example templates: %w", err)
	}
	res, err := render.New(l, tpls).Render(st)
	if err != nil {
		return nil, fmt.Errorf("render the example: %w", err)
	}
	realmOf := map[string]string{}
	var realms []string
	for _, o := range l.Offerings {
		c := o.Settings.Common()
		if !c.KeycloakEnabled {
			continue
		}
		realmOf[o.Name] = c.Keycloak.Realm
		if !slices.Contains(realms, c.Keycloak.Realm) {
			realms = append(realms, c.Keycloak.Realm)
			kc.AddRealm(c.Keycloak.Realm)
		}
	}
	seen := map[string]bool{}
	for _, g := range res.Groups {
		for _, m := range g.Members {
			if key := realmOf[g.Offering] + "/" + m; realmOf[g.Offering] != "" && !seen[key] {
				seen[key] = true
				kc.AddUser(realmOf[g.Offering], m)
			}
		}
	}
	slices.Sort(realms)
	return realms, nil
}

func (e *env) say(format string, args ...any) { fmt.Fprintf(e.out, format+"\n", args...) }

// step prints a step's title.
func (e *env) step(title string) { e.say("\n=== %s\n", title) }

// cli runs waldur-gitops in-process, prints its output, and checks its exit code.
func (e *env) cli(want int, args ...string) error {
	args = append(args, "--config", e.config, "--log-level", "warning")
	e.say("$ waldur-gitops %s", strings.Join(args, " "))
	var stdout, stderr bytes.Buffer
	code := cli.Main(args, &stdout, &stderr)
	e.out.Write(stdout.Bytes())
	if stderr.Len() > 0 {
		e.out.Write(stderr.Bytes())
	}
	if code != want {
		return fmt.Errorf("waldur-gitops %s: exit %d, want %d", args[0], code, want)
	}
	return nil
}

// git runs git on the bare repository and prints its output.
func (e *env) git(args ...string) (string, error) {
	out, err := exec.Command("git", append([]string{"--git-dir", e.repo}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// showCommit prints the last commit with its files, the first few of them.
func (e *env) showCommit() error {
	e.say("$ git log -1 --stat")
	out, err := e.git("log", "-1", "--stat=120", "--format=commit %H%nAuthor: %an <%ae>%n%n    %s")
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	const most = 20
	if len(lines) > most+1 {
		lines = append(lines[:most], fmt.Sprintf("   … %d more file(s)", len(lines)-most-1), lines[len(lines)-1])
	}
	e.say("%s", strings.Join(lines, "\n"))
	return nil
}

// orders returns every order of the fake Waldur with its state.
func (e *env) orders() map[waldur.UUID]waldur.Order {
	out := map[waldur.UUID]waldur.Order{}
	for _, o := range e.snapshot.Offerings {
		for _, ord := range o.Orders {
			if got, ok := e.waldur.Order(ord.UUID); ok {
				out[ord.UUID] = got
			}
		}
	}
	if got, ok := e.waldur.Order(e.newOrder); e.newOrder != "" && ok {
		out[e.newOrder] = got
	}
	return out
}

// showOrders prints the orders' states before and after, and fails unless
// every one is done.
func (e *env) showOrders(before map[waldur.UUID]waldur.Order) error {
	after := e.orders()
	ids := make([]string, 0, len(after))
	for id := range after {
		ids = append(ids, string(id))
	}
	slices.Sort(ids)
	e.say("Waldur orders:")
	var notDone []string
	for _, id := range ids {
		a := after[waldur.UUID(id)]
		name := a.ResourceName
		if r, ok := e.waldur.Resource(a.MarketplaceResourceUUID); ok && name == "" {
			name = r.Name
		}
		e.say("  %-9s %-24s %s → %s", a.Type, name, before[waldur.UUID(id)].State, a.State)
		if a.State != waldur.OrderDone {
			notDone = append(notDone, id)
		}
	}
	if len(notDone) > 0 {
		return fmt.Errorf("order(s) not done: %s", strings.Join(notDone, ", "))
	}
	return nil
}

// showGroups prints the Keycloak groups of every realm with their members,
// and fails when there are none.
func (e *env) showGroups() error {
	n := 0
	for _, realm := range e.realms {
		paths := e.keycloak.Paths(realm)
		e.say("Keycloak realm %s: %d group(s)", realm, len(paths))
		for _, p := range paths {
			g, _ := e.keycloak.Group(realm, p)
			members := "no members"
			if len(g.Members) > 0 {
				members = strings.Join(g.Members, ", ")
			}
			e.say("  %-60s %s", p, members)
		}
		n += len(paths)
	}
	if n == 0 {
		return errors.New("sync created no Keycloak group")
	}
	return nil
}

func (e *env) firstSync() error {
	return e.syncAndShow("1. sync: Waldur → Git commit → Keycloak groups → orders done", func() error {
		if err := e.showGroups(); err != nil {
			return err
		}
		e.say("")
		return nil
	})
}

// syncAndShow is a step titled title that runs sync and shows its commit,
// then what more shows, then the orders the sync moved.
func (e *env) syncAndShow(title string, more func() error) error {
	e.step(title)
	before := e.orders()
	if err := e.cli(cli.ExitOK, "sync"); err != nil {
		return err
	}
	e.say("")
	if err := e.showCommit(); err != nil {
		return err
	}
	e.say("")
	if err := more(); err != nil {
		return err
	}
	return e.showOrders(before)
}

// newResource is the resource the demo orders in the second step.
var newResource = waldur.UUID("de30de30de30de30de30de30de30de30")

// change raises a limit of an existing resource and orders a new resource,
// as a Waldur user would.
func (e *env) change() error {
	e.step("2. In Waldur: " + changedLimit + " of \"Genomics pipeline\" goes up, and a new resource is ordered")
	r, ok := e.waldur.Resource(changedResource)
	if !ok {
		return fmt.Errorf("resource %s is not in the example", changedResource)
	}
	old := r.Limits[changedLimit]
	v, err := old.Int()
	if err != nil {
		return fmt.Errorf("limit %s of %s: %w", changedLimit, r.Name, err)
	}
	r.Limits[changedLimit] = waldur.Amount(strconv.FormatInt(2*v, 10))
	e.waldur.AddResource(r)
	e.say("  limit %s of %s: %v → %v", changedLimit, r.Name, old, r.Limits[changedLimit])

	n := r
	n.UUID, n.Name, n.Slug, n.BackendID, n.State = newResource, "Demo workshop", "demo-workshop", "", waldur.ResourceCreating
	n.Limits = waldur.Limits{"cpu": "4", "ram": "8", "storage": "50", "gpu": "0"}
	n.Created = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	e.waldur.AddResource(n)
	ord := e.waldur.AddOrder(n.OfferingUUID, waldur.Order{
		Type: "Create", State: "pending-provider", MarketplaceResourceUUID: n.UUID,
		ResourceName: n.Name, ProjectSlug: n.ProjectSlug, Limits: n.Limits, PlanUUID: n.PlanUUID, Created: n.Created,
	})
	e.newOrder = ord
	e.say("  Create order %s for %q in project %s (pending-provider)", ord, n.Name, n.ProjectName)

	e.step("3. render --dry-run: what the next sync would change (exit 1: there are differences)")
	return e.cli(cli.ExitDiff, "render", "--dry-run")
}

func (e *env) secondSync() error {
	return e.syncAndShow("4. sync again: the change is committed and the new order is done", func() error {
		if _, ok := e.orders()[e.newOrder]; !ok {
			return fmt.Errorf("order %s vanished", e.newOrder)
		}
		return nil
	})
}

// printManual says how to use the servers by hand.
func (e *env) printManual() {
	base := e.waldur.URL() + "/api"
	e.say(`
The servers keep running until Ctrl-C. By hand, from another terminal:

  export %s=%s
  export %s=%s
  go run ./cmd/waldur-gitops render --dry-run --config %s
  go run ./cmd/waldur-gitops sync --config %s
  go run ./cmd/waldur-gitops diagnose --config %s
  go run ./cmd/waldur-gitops snapshot --config %s --out state.json

  # Waldur (test server; no writes through curl, the state lives in this process)
  curl -s -H 'Authorization: Token %s' '%s/marketplace-provider-resources/?page_size=5'
  curl -s -H 'Authorization: Token %s' '%s/marketplace-orders/?state=executing'

  # Keycloak (fake): a token, then the groups of realm %s
  TOKEN=$(curl -s -d grant_type=password -d client_id=admin-cli -d username=%s -d password=%s \
    %s/realms/master/protocol/openid-connect/token | sed 's/.*"access_token":"\([^"]*\)".*/\1/')
  curl -s -H "Authorization: Bearer $TOKEN" %s/admin/realms/%s/groups

  # the GitOps repository
  git --git-dir %s log --stat`,
		config.TokenEnv, demoToken, keycloakPasswordEnv, keycloakPassword,
		e.config, e.config, e.config, e.config,
		demoToken, base, demoToken, base,
		kctest.Realm, kctest.AdminUser, keycloakPassword, e.keycloak.URL, e.keycloak.URL, kctest.Realm, e.repo)
}
