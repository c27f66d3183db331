package diagnose

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/internal/redact"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/ociship"
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

// ClusterAPI is what the cluster checks call; *kube.Reader implements it.
type ClusterAPI interface {
	Version(ctx context.Context) (string, error)
	CanList(ctx context.Context) error
	// Allowed asks the server whether this account may do a.
	Allowed(ctx context.Context, a kube.Access) (bool, error)
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
// commands); without it each offering's clusters are checked: its
// kubeconfig_path and the cluster of each target of its backend (a Rancher
// offering's management_kubeconfig_path and _context), else
// client-go's default rules — $KUBECONFIG, ~/.kube/config, the service account
// of the pod — which is where apply writes and report reads. A default that
// finds no configuration at all is skipped, not failed: GitOps mode needs no
// cluster.
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
	if cfg.Git.FluxOCIRepository != "" {
		out = append(out, RegistryCheck(cfg))
	}
	type realm struct {
		k         config.KeycloakSettings
		offerings []string
	}
	var realms []*realm
	byKey := map[string]*realm{}
	for i := range cfg.Offerings {
		c := cfg.Offerings[i].Settings.Common()
		if !c.KeycloakEnabled {
			continue
		}
		k := c.Keycloak
		key := strings.Join([]string{k.URL, k.UserRealm, k.ClientID, k.Username, k.Realm}, "\x00")
		if byKey[key] == nil {
			byKey[key] = &realm{k: k}
			realms = append(realms, byKey[key])
		}
		byKey[key].offerings = append(byKey[key].offerings, cfg.Offerings[i].Name)
	}
	for _, r := range realms {
		kc, err := d.Keycloak(r.k)
		for _, c := range KeycloakChecks(r.k, kc, err) {
			c.Offerings = r.offerings
			c.ID, c.Needs = prefix(r.offerings, c.ID), prefix(r.offerings, c.Needs)
			out = append(out, c)
		}
	}
	for _, cl := range clusterSources(cfg, kubeconfig) {
		c := clusterCheck(cl.source, d.Cluster, appliedAccess(cfg, cl.offerings))
		c.Offerings = cl.offerings
		out = append(out, c)
	}
	out = append(out, CapacityChecks(cfg, kubeconfig, d.Cluster)...)
	out = append(out, backendChecks(cfg, kubeconfig)...)
	if cfg.Git.FluxReconcile {
		s := kube.Source{Path: cfg.Git.FluxKubeconfigPath, Context: cfg.Git.FluxKubeconfigContext}
		if kubeconfig != "" {
			s = kube.Source{Path: kubeconfig}
		}
		out = append(out, FluxReconcileCheck(cfg.Git, s, d.Cluster))
	}
	return out
}

// backendChecks lists the rows each offering's backend registers
// (backend.Backend.Diagnose), in offering order; kubeconfig, when set,
// replaces the offerings' kubeconfigs as it does for the cluster checks.
func backendChecks(cfg *config.Config, kubeconfig string) []Check {
	var out []Check
	for i := range cfg.Offerings {
		o := &cfg.Offerings[i]
		b := backend.Lookup(o.BackendType)
		if b == nil || b.Diagnose == nil {
			continue
		}
		bo := backend.Offering{Name: o.Name, Kubeconfig: kubeconfig}
		if kubeconfig == "" {
			c := o.Settings.Common()
			bo.Kubeconfig, bo.KubeconfigContext = c.KubeconfigPath, c.KubeconfigContext
		}
		for _, row := range b.Diagnose(bo) {
			out = append(out, Check{Name: row.Name, Target: row.Target, Offerings: []string{o.Name}, Run: row.Run})
		}
	}
	return out
}

// consumerRoles is where the example Roles of what waldur-gitops needs from
// Flux and Argo CD are, for the reasons of the access checks.
const consumerRoles = "examples/rbac/consumers"

// FluxReconcileAccess lists what git.flux_reconcile asks of the cluster
// Flux runs in: annotating the GitRepository and, in the OCI layout, the
// shards' OCIRepositories (in the shard-branch layout, their GitRepositories).
func FluxReconcileAccess(g config.Git) []kube.Access {
	out := []kube.Access{{Verb: "patch", Resource: kube.FluxGitRepositoriesGVR, Namespace: g.FluxSourceNamespace, Name: g.FluxSourceName}}
	if g.FluxOCIRepository != "" {
		out = append(out, kube.Access{Verb: "patch", Resource: kube.FluxOCIRepositoriesGVR, Namespace: g.FluxNamespace})
	}
	if g.FluxShardBranches {
		out = append(out, kube.Access{Verb: "patch", Resource: kube.FluxGitRepositoriesGVR, Namespace: g.FluxNamespace})
	}
	return out
}

// appliedAccess lists what order_done_on: applied reads of the consumer in
// the cluster of offerings, when one of them waits for it: the shard
// Kustomizations of Flux (git.flux_shards) and the Applications of Argo CD
// (git.argocd_namespace). In the shard-branch layout with Argo CD the
// shard branches are Argo CD's (its per-shard form) and no Kustomization is
// read.
func appliedAccess(cfg *config.Config, offerings []string) []kube.Access {
	applied := slices.ContainsFunc(cfg.Offerings, func(o config.Offering) bool {
		return o.OrderDoneOn == config.DoneOnApplied && slices.Contains(offerings, o.Name)
	})
	if !applied {
		return nil
	}
	var out []kube.Access
	if cfg.Git.FluxShards > 0 && (!cfg.Git.FluxShardBranches || cfg.Git.ArgoCDNamespace == "") {
		out = append(out, kube.Access{Verb: "get", Resource: kube.FluxKustomizationsGVR, Namespace: cfg.Git.FluxNamespace})
	}
	if cfg.Git.ArgoCDNamespace != "" {
		out = append(out, kube.Access{Verb: "list", Resource: kube.ArgoApplicationsGVR, Namespace: cfg.Git.ArgoCDNamespace})
	}
	return out
}

// denied returns what of needs the account may not do, as one reason naming
// each and the Roles that grant them; "" when it may do all.
func denied(ctx context.Context, c ClusterAPI, needs []kube.Access) (string, error) {
	var no []string
	for _, a := range needs {
		ok, err := c.Allowed(ctx, a)
		if err != nil {
			return "", err
		}
		if !ok {
			no = append(no, a.String())
		}
	}
	if len(no) == 0 {
		return "", nil
	}
	return "this account may not " + strings.Join(no, ", nor ") + " (the Roles in " + consumerRoles + " grant it)", nil
}

// FluxReconcileCheck checks, with git.flux_reconcile, that the cluster Flux
// runs in (s: git.flux_kubeconfig_path and _context) answers and lets this
// account request reconciles (FluxReconcileAccess). It asks the API server
// and changes nothing.
func FluxReconcileCheck(g config.Git, s kube.Source, open func(kube.Source) (ClusterAPI, error)) Check {
	needs := FluxReconcileAccess(g)
	return Check{Name: "flux reconcile", Target: s.String(), Credential: ClusterCredential(s), Run: func(ctx context.Context) (string, error) {
		c, err := open(s)
		if err != nil {
			return "", err
		}
		v, err := c.Version(ctx)
		if err != nil {
			return "", err
		}
		why, err := denied(ctx, c, needs)
		if err != nil {
			return "", fmt.Errorf("server %s: %w", v, err)
		}
		if why != "" {
			return "", fmt.Errorf("server %s: %s", v, why)
		}
		granted := make([]string, len(needs))
		for i, a := range needs {
			granted[i] = a.String()
		}
		return "server " + v + "; may " + strings.Join(granted, ", "), nil
	}}
}

// prefix makes a check ID unique to a set of offerings.
func prefix(offerings []string, id string) string {
	if id == "" {
		return ""
	}
	return strings.Join(offerings, ",") + "/" + id
}

// cluster is a distinct cluster to check and the offerings that use it.
type cluster struct {
	source    kube.Source
	offerings []string
}

// clusterSources lists the distinct clusters to check, in config order: each
// offering's common cluster, then the cluster of each of its backend's
// targets (config.Settings.Kubeconfig) that is another one.
func clusterSources(cfg *config.Config, kubeconfig string) []cluster {
	var out []cluster
	add := func(s kube.Source, offering string) {
		for i := range out {
			if out[i].source == s {
				if !slices.Contains(out[i].offerings, offering) {
					out[i].offerings = append(out[i].offerings, offering)
				}
				return
			}
		}
		out = append(out, cluster{source: s, offerings: []string{offering}})
	}
	for i := range cfg.Offerings {
		o := &cfg.Offerings[i]
		if kubeconfig != "" {
			add(kube.Source{Path: kubeconfig}, o.Name)
			continue
		}
		c := o.Settings.Common()
		add(kube.Source{Path: c.KubeconfigPath, Context: c.KubeconfigContext}, o.Name)
		for _, target := range backend.TargetsOf(o.BackendType) {
			path, context := o.Settings.Kubeconfig(target)
			add(kube.Source{Path: path, Context: context}, o.Name)
		}
	}
	return out
}

// failing returns a check that fails with err (a client that could not be built).
func failing(c Check, err error) Check {
	c.Run = func(context.Context) (string, error) { return "", err }
	return c
}

// WaldurCredential names where an offering's Waldur token is read from, in
// the order config.Offering.Token reads it.
func WaldurCredential(o *config.Offering) string {
	switch {
	case o.WaldurAPIToken != "":
		return "waldur_api_token (in the config)"
	case o.WaldurAPITokenFile != "":
		return "waldur_api_token_file " + o.WaldurAPITokenFile
	case strings.TrimSpace(os.Getenv(config.TokenEnv)) != "":
		return "$" + config.TokenEnv
	}
	return "none"
}

// GitCredential names the Git credential, in the order go-git's auth is
// built from the config.
func GitCredential(g config.Git) string {
	if g.SSHKeyFile != "" {
		return "git.ssh_key_file " + g.SSHKeyFile
	}
	return firstCredential("git.username", g.Username,
		[2]string{"git.password_file ", g.PasswordFile},
		[2]string{"git.password_env $", g.PasswordEnv},
		[2]string{"git.token_file ", g.TokenFile},
		[2]string{"git.token_env $", g.TokenEnv})
}

// RegistryCredential names the credential the Flux shard artifacts are
// pushed with (git.flux_oci_*).
func RegistryCredential(g config.Git) string {
	return firstCredential("git.flux_oci_username", g.FluxOCIUsername,
		[2]string{"git.flux_oci_password_file ", g.FluxOCIPasswordFile},
		[2]string{"git.flux_oci_password_env $", g.FluxOCIPasswordEnv})
}

// firstCredential names the first of sources (a key's words and its value)
// whose value is set, after the username under userKey when there is one;
// "none" when no source is set.
func firstCredential(userKey, user string, sources ...[2]string) string {
	for _, src := range sources {
		if src[1] == "" {
			continue
		}
		if user != "" {
			return userKey + " " + user + ", " + src[0] + src[1]
		}
		return src[0] + src[1]
	}
	return "none"
}

// RegistryCheck checks, in the OCI layout (git.flux_oci_repository), that
// the registry can be read and would accept a push of the first shard's
// artifact.
func RegistryCheck(cfg *config.Config) Check {
	g := cfg.Git
	c := Check{Name: "flux registry", Target: g.FluxOCIRepository, Credential: RegistryCredential(g)}
	c.Run = func(ctx context.Context) (string, error) {
		reg, err := ociship.FromConfig(g)
		if err != nil {
			return "", err
		}
		shard := registryShard(cfg)
		if shard == "" {
			return "", Skip("no offering, so no shard")
		}
		return reg.Check(ctx, shard)
	}
	return c
}

// registryShard names the first shard of the first offering target, whose
// repository the registry check tries.
func registryShard(cfg *config.Config) string {
	if len(cfg.Offerings) == 0 {
		return ""
	}
	o := &cfg.Offerings[0]
	target := backend.TargetsOf(o.BackendType)[0]
	return gitsync.FluxLayout{NamePrefix: cfg.Git.FluxNamePrefix, Generation: cfg.Git.FluxShardGeneration}.ShardName(gitsync.FluxTarget{Offering: o.DirName(), Target: target}, 0)
}

// KeycloakCredential names the Keycloak credential: the user and where the
// password is read from, else the client and where its secret is.
func KeycloakCredential(k config.KeycloakSettings) string {
	secret := ""
	switch {
	case k.ClientSecret != "":
		secret = "client_secret (in the config)"
	case k.ClientSecretFile != "":
		secret = "client_secret_file " + k.ClientSecretFile
	case k.ClientSecretEnv != "":
		secret = "client_secret_env $" + k.ClientSecretEnv
	}
	if k.Username == "" {
		if secret == "" {
			return "none"
		}
		return "client " + k.ClientID + ", " + secret
	}
	pw := "no password"
	switch {
	case k.Password != "":
		pw = "keycloak_password (in the config)"
	case k.PasswordFile != "":
		pw = "keycloak_password_file " + k.PasswordFile
	case k.PasswordEnv != "":
		pw = "keycloak_password_env $" + k.PasswordEnv
	}
	out := "keycloak_username " + k.Username + ", " + pw
	if secret != "" {
		out += ", " + secret
	}
	return out
}

// ClusterCredential names the kubeconfig a cluster check uses.
func ClusterCredential(s kube.Source) string {
	if s.Path == "" {
		return "client-go defaults: $KUBECONFIG, ~/.kube/config, else the pod's service account"
	}
	return "kubeconfig " + s.String()
}

// WaldurChecks checks an offering's token (GET /api/users/me/) and the offering
// itself (GET /api/marketplace-provider-offerings/<uuid>/), and compares the
// configured components with the offering's.
func WaldurChecks(o *config.Offering, api WaldurAPI, clientErr error) []Check {
	target := fmt.Sprintf("%s (%s)", o.Name, redact.URL(o.WaldurAPIURL))
	cred := WaldurCredential(o)
	offerings := []string{o.Name}
	tokenID := "waldur token/" + o.Name
	token := Check{Name: "waldur token", Target: target, Offerings: offerings, Credential: cred, ID: tokenID}
	offering := Check{Name: "waldur offering", Target: o.Name + " " + o.WaldurOfferingUUID, Offerings: offerings, Credential: cred, Needs: tokenID}
	if clientErr != nil {
		return []Check{failing(token, clientErr), failing(offering, clientErr)}
	}
	token.Run = func(ctx context.Context) (string, error) {
		u, err := api.CurrentUser(ctx)
		if err != nil {
			return "", err
		}
		d := "authenticated as " + u.Username
		if u.IsStaff {
			d += " (staff)"
		}
		return d, nil
	}
	offering.Run = func(ctx context.Context) (string, error) {
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
	}
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
	cred := GitCredential(g)
	read := Check{Name: "git read", Target: target, Credential: cred, ID: "git read"}
	write := Check{Name: "git write", Target: target, Credential: cred, Needs: "git read"}
	if clientErr != nil {
		return []Check{failing(read, clientErr), failing(write, clientErr)}
	}
	branch := "refs/heads/" + g.Branch
	read.Run = func(ctx context.Context) (string, error) {
		refs, err := remote.ReadRefs(ctx)
		if err != nil {
			return "", err
		}
		if h, ok := refs[branch]; ok {
			return fmt.Sprintf("branch %s at %.12s", g.Branch, h), nil
		}
		return fmt.Sprintf("branch %s does not exist yet (sync creates it); %d ref(s)", g.Branch, len(refs)), nil
	}
	write.Run = func(ctx context.Context) (string, error) {
		refs, err := remote.WriteRefs(ctx)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("push session accepted (%d ref(s) advertised)", len(refs)), nil
	}
	return []Check{read, write}
}

// KeycloakChecks checks the login and reading the realm's groups.
func KeycloakChecks(k config.KeycloakSettings, kc Keycloak, clientErr error) []Check {
	shown := strings.TrimRight(redact.URL(k.URL), "/")
	cred := KeycloakCredential(k)
	loginID := "keycloak login/" + k.URL + "/" + k.UserRealm + "/" + k.Realm
	login := Check{Name: "keycloak login", Target: fmt.Sprintf("%s realm %s", shown, k.UserRealm), Credential: cred, ID: loginID}
	realm := Check{Name: "keycloak realm", Target: fmt.Sprintf("%s realm %s", shown, k.Realm), Credential: cred, Needs: loginID}
	if clientErr != nil {
		return []Check{failing(login, clientErr), failing(realm, clientErr)}
	}
	who := k.Username
	if who == "" {
		who = "client " + k.ClientID
	}
	login.Run = func(ctx context.Context) (string, error) {
		if err := kc.Login(ctx); err != nil {
			return "", err
		}
		return "logged in as " + who, nil
	}
	realm.Run = func(ctx context.Context) (string, error) {
		n, err := kc.ReadGroups(ctx)
		if err != nil {
			return "", err
		}
		if n == 0 {
			return "groups readable (none yet)", nil
		}
		return "groups readable", nil
	}
	return []Check{login, realm}
}

// NewCluster opens the cluster of s for the cluster check, with timeout as
// the limit of every request (diagnose --timeout), so that client-go's own
// default (32s, shown in its URLs as ?timeout=32s) does not apply.
func NewCluster(s kube.Source, timeout time.Duration) (ClusterAPI, error) {
	cfg, err := s.RESTConfig()
	if err != nil {
		return nil, err
	}
	if timeout > 0 {
		cfg.Timeout = timeout
	}
	return kube.NewReader(cfg)
}

// ClusterCheck checks that a kubeconfig loads, the API server answers, and
// namespaces and resourcequotas can be listed.
func ClusterCheck(s kube.Source, open func(kube.Source) (ClusterAPI, error)) Check {
	return clusterCheck(s, open, nil)
}

// clusterCheck is ClusterCheck that also asks for needs (appliedAccess).
func clusterCheck(s kube.Source, open func(kube.Source) (ClusterAPI, error), needs []kube.Access) Check {
	return Check{Name: "cluster", Target: s.String(), Credential: ClusterCredential(s), Run: func(ctx context.Context) (string, error) {
		c, err := open(s)
		if err != nil {
			if s.Path == "" && emptyConfig(err) {
				return "", Skip("no cluster configured: no kubeconfig_path, no --kubeconfig, no $KUBECONFIG or ~/.kube/config, not in a pod (only apply and measured usage need one)")
			}
			return "", err
		}
		v, err := c.Version(ctx)
		if err != nil {
			return "", err
		}
		if err := c.CanList(ctx); err != nil {
			return "", fmt.Errorf("server %s: %w", v, err)
		}
		why, err := denied(ctx, c, needs)
		if err != nil {
			return "", fmt.Errorf("server %s: %w", v, err)
		}
		if why != "" {
			return "", fmt.Errorf("server %s: namespaces and resourcequotas readable, but order_done_on: applied reads the GitOps consumer and %s", v, why)
		}
		detail := "server " + v + "; namespaces and resourcequotas readable"
		for _, a := range needs {
			detail += "; may " + a.String()
		}
		return detail, nil
	}}
}

// emptyConfig reports whether err, or an error it wraps, is client-go's "no
// configuration has been provided" (clientcmd.IsEmptyConfig does not unwrap).
func emptyConfig(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if clientcmd.IsEmptyConfig(err) {
			return true
		}
	}
	return false
}
