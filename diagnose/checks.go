package diagnose

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/internal/redact"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/waldur"
)

// WaldurAPI is what the Waldur checks call; *waldur.Client implements it.
type WaldurAPI interface {
	CurrentUser(ctx context.Context) (*waldur.User, error)
	GetProviderOffering(ctx context.Context, offering waldur.UUID) (*waldur.ProviderOffering, error)
}

var _ WaldurAPI = (*waldur.Client)(nil)

// GitRemote is what the Git checks call; NewGitRemote implements it with go-git.
type GitRemote interface {
	// ReadRefs lists the remote's references as a fetch sees them (ls-remote).
	ReadRefs(ctx context.Context) (map[string]string, error)
	// WriteRefs opens a push session and lists the references it advertises,
	// without sending anything: hosts refuse it to credentials that may not push.
	WriteRefs(ctx context.Context) (map[string]string, error)
}

// Keycloak is what the Keycloak checks call; NewKeycloak implements it with gocloak.
type Keycloak interface {
	// Login obtains a token the way the Keycloak stage does.
	Login(ctx context.Context) error
	// ReadGroups logs in (once) and reads at most one group of the realm.
	ReadGroups(ctx context.Context) (int, error)
}

// ClusterAPI is what the cluster check calls; *kube.Reader implements it.
type ClusterAPI interface {
	Version(ctx context.Context) (string, error)
	CanList(ctx context.Context) error
}

var _ ClusterAPI = (*kube.Reader)(nil)

// Deps build the clients of the checks. A constructor's error fails the
// checks that needed the client, with that error as the reason.
type Deps struct {
	Waldur   func(o *config.Offering) (WaldurAPI, error)
	Git      func(g config.Git) (GitRemote, error)
	Keycloak func(k config.KeycloakSettings) (Keycloak, error)
	Cluster  func(s kube.Source) (ClusterAPI, error)
}

// Checks lists the checks of every connection cfg names. kubeconfig, when set,
// replaces every kubeconfig of the config (as --kubeconfig does for the other
// commands); without it the clusters of the offerings that set
// kubeconfig_path are checked.
func Checks(cfg *config.Config, kubeconfig string, d Deps) []Check {
	var out []Check
	for i := range cfg.Offerings {
		o := &cfg.Offerings[i]
		api, err := d.Waldur(o)
		out = append(out, WaldurChecks(o, api, err)...)
	}
	if cfg.Git.URL != "" {
		remote, err := d.Git(cfg.Git)
		out = append(out, GitChecks(cfg.Git, remote, err)...)
	}
	seen := map[string]bool{}
	for i := range cfg.Offerings {
		c := cfg.Offerings[i].Settings.Common()
		if !c.KeycloakEnabled {
			continue
		}
		k := c.Keycloak
		key := strings.Join([]string{k.URL, k.UserRealm, k.ClientID, k.Username, k.Realm}, "\x00")
		if seen[key] {
			continue
		}
		seen[key] = true
		kc, err := d.Keycloak(k)
		out = append(out, KeycloakChecks(k, kc, err)...)
	}
	for _, s := range clusterSources(cfg, kubeconfig) {
		out = append(out, ClusterCheck(s, d.Cluster))
	}
	return out
}

// clusterSources lists the distinct clusters to check.
func clusterSources(cfg *config.Config, kubeconfig string) []kube.Source {
	if kubeconfig != "" {
		return []kube.Source{{Path: kubeconfig}}
	}
	var out []kube.Source
	add := func(s kube.Source) {
		if s.Path != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for i := range cfg.Offerings {
		o := &cfg.Offerings[i]
		c := o.Settings.Common()
		add(kube.Source{Path: c.KubeconfigPath, Context: c.KubeconfigContext})
		if r := o.Settings.Rancher; r != nil {
			add(kube.Source{Path: r.ManagementKubeconfigPath, Context: r.ManagementKubeconfigContext})
		}
	}
	return out
}

// failing returns a check that fails with err (a client that could not be built).
func failing(name, target string, err error) Check {
	return Check{Name: name, Target: target, Run: func(context.Context) (string, error) { return "", err }}
}

// WaldurChecks checks an offering's token (GET /api/users/me/) and the offering
// itself (GET /api/marketplace-provider-offerings/<uuid>/), and compares the
// configured components with the offering's.
func WaldurChecks(o *config.Offering, api WaldurAPI, clientErr error) []Check {
	target := fmt.Sprintf("%s (%s)", o.Name, redact.URL(o.WaldurAPIURL))
	if clientErr != nil {
		return []Check{failing("waldur token", target, clientErr), failing("waldur offering", o.Name, clientErr)}
	}
	token := Check{Name: "waldur token", Target: target, Run: func(ctx context.Context) (string, error) {
		u, err := api.CurrentUser(ctx)
		if err != nil {
			return "", err
		}
		d := "authenticated as " + u.Username
		if u.IsStaff {
			d += " (staff)"
		}
		return d, nil
	}}
	offering := Check{Name: "waldur offering", Target: o.Name + " " + o.WaldurOfferingUUID, Run: func(ctx context.Context) (string, error) {
		off, err := api.GetProviderOffering(ctx, waldur.UUID(o.WaldurOfferingUUID))
		if err != nil {
			if waldur.IsNotFound(err) {
				return "", fmt.Errorf("%w (the offering does not exist, or the token's user is not its provider)", err)
			}
			return "", err
		}
		d := fmt.Sprintf("%q, state %s, %d component(s)", off.Name, off.State, len(off.Components))
		if off.Type != "" {
			d += ", type " + off.Type
		}
		if missing := missingComponents(o, off); len(missing) > 0 {
			return "", fmt.Errorf("%s; the config reports components the offering lacks: %s (set_usage would refuse them)", d, strings.Join(missing, ", "))
		}
		return d, nil
	}}
	return []Check{token, offering}
}

// missingComponents lists the configured components that usage is reported
// for but the Waldur offering does not have (or does not bill by usage or limit).
func missingComponents(o *config.Offering, off *waldur.ProviderOffering) []string {
	var missing []string
	for key, c := range o.BackendComponents {
		if c.AccountingType != "limit" && !(c.AccountingType == "usage" && c.MeasuredFrom != "") {
			continue
		}
		if !slices.ContainsFunc(off.Components, func(w waldur.OfferingComponent) bool {
			return w.Type == key && (w.BillingType == "usage" || w.BillingType == "limit")
		}) {
			missing = append(missing, key)
		}
	}
	slices.Sort(missing)
	return missing
}

// GitChecks checks that the repository can be read (and whether the branch
// exists) and that a push would be accepted.
func GitChecks(g config.Git, remote GitRemote, clientErr error) []Check {
	target := redact.URL(gitsync.RedactURL(g.URL))
	if clientErr != nil {
		return []Check{failing("git read", target, clientErr), failing("git write", target, clientErr)}
	}
	branch := "refs/heads/" + g.Branch
	read := Check{Name: "git read", Target: target, Run: func(ctx context.Context) (string, error) {
		refs, err := remote.ReadRefs(ctx)
		if err != nil {
			return "", err
		}
		if h, ok := refs[branch]; ok {
			return fmt.Sprintf("branch %s at %.12s", g.Branch, h), nil
		}
		return fmt.Sprintf("branch %s does not exist yet (sync creates it); %d ref(s)", g.Branch, len(refs)), nil
	}}
	write := Check{Name: "git write", Target: target, Run: func(ctx context.Context) (string, error) {
		refs, err := remote.WriteRefs(ctx)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("push session accepted (%d ref(s) advertised)", len(refs)), nil
	}}
	return []Check{read, write}
}

// KeycloakChecks checks the login and reading the realm's groups.
func KeycloakChecks(k config.KeycloakSettings, kc Keycloak, clientErr error) []Check {
	shown := strings.TrimRight(redact.URL(k.URL), "/")
	login := fmt.Sprintf("%s realm %s", shown, k.UserRealm)
	realm := fmt.Sprintf("%s realm %s", shown, k.Realm)
	if clientErr != nil {
		return []Check{failing("keycloak login", login, clientErr), failing("keycloak realm", realm, clientErr)}
	}
	who := k.Username
	if who == "" {
		who = "client " + k.ClientID
	}
	return []Check{
		{Name: "keycloak login", Target: login, Run: func(ctx context.Context) (string, error) {
			if err := kc.Login(ctx); err != nil {
				return "", err
			}
			return "logged in as " + who, nil
		}},
		{Name: "keycloak realm", Target: realm, Run: func(ctx context.Context) (string, error) {
			n, err := kc.ReadGroups(ctx)
			if err != nil {
				return "", err
			}
			if n == 0 {
				return "groups readable (none yet)", nil
			}
			return "groups readable", nil
		}},
	}
}

// ClusterCheck checks that a kubeconfig loads, the API server answers, and
// namespaces and resourcequotas can be listed.
func ClusterCheck(s kube.Source, open func(kube.Source) (ClusterAPI, error)) Check {
	return Check{Name: "cluster", Target: s.String(), Run: func(ctx context.Context) (string, error) {
		c, err := open(s)
		if err != nil {
			return "", err
		}
		v, err := c.Version(ctx)
		if err != nil {
			return "", err
		}
		if err := c.CanList(ctx); err != nil {
			return "", fmt.Errorf("server %s: %w", v, err)
		}
		return strings.TrimSpace("server " + v + "; namespaces and resourcequotas readable"), nil
	}}
}
