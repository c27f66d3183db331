package examples_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/waldur/waldur-gitops/config"
)

// one returns the single object of kind in objs, failing otherwise.
func one(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s, got %d", kind, len(found))
	}
	return found[0]
}

// field reads a nested field of any type, failing when it is missing.
func field(t *testing.T, obj map[string]any, fields ...string) any {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(obj, fields...)
	if err != nil || !ok {
		t.Fatalf("field %s: missing (%v)", strings.Join(fields, "."), err)
	}
	return v
}

// mountedVolume returns the volume mounted at the deepest mount path that
// holds file, and the file's path inside it.
func mountedVolume(mounts []any, volumes map[string]map[string]any, file string) (map[string]any, string) {
	best, rest := "", ""
	var vol map[string]any
	for _, m := range mounts {
		mm := m.(map[string]any)
		mp, _ := mm["mountPath"].(string)
		if strings.HasPrefix(file, mp+"/") && len(mp) > len(best) {
			best, rest = mp, strings.TrimPrefix(file, mp+"/")
			vol = volumes[mm["name"].(string)]
		}
	}
	return vol, rest
}

var rbacKinds = []string{"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}

// The deploy overlays keep what examples/deploy/README.md promises: a CronJob
// that never overlaps or hammers and whose run ends itself a minute before
// the Job is killed, runs locked down, reads secrets only from
// mounted Secrets that the manifests never define, carries a config that
// loads, and has exactly the API access its mode needs.
func TestExampleDeployOverlays(t *testing.T) {
	applyRole, err := os.ReadFile("rbac/apply.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := decodeDocuments(applyRole)
	if err != nil || len(docs) != 1 {
		t.Fatalf("rbac/apply.yaml: want one ClusterRole: %v", err)
	}
	wantRules := docs[0]["rules"]

	cases := []struct {
		overlay   string
		workload  string
		command   string
		automount bool
		rbac      bool
		// secretKeys are config keys that must be set, each to a file in a
		// mounted Secret.
		secretKeys []string
		// replicas and strategy of a Deployment.
		replicas int64
		strategy string
	}{
		{overlay: "gitops", workload: "CronJob", command: "sync", automount: false, rbac: false,
			secretKeys: []string{"waldur_api_token_file", "git.token_file", "keycloak_password_file"}},
		{overlay: "direct", workload: "CronJob", command: "apply", automount: true, rbac: true,
			secretKeys: []string{"waldur_api_token_file"}},
		{overlay: "serve", workload: "Deployment", command: "serve", automount: false, rbac: false,
			secretKeys: []string{"waldur_api_token_file", "git.token_file", "keycloak_password_file"}, replicas: 1, strategy: "Recreate"},
		{overlay: "serve-ha", workload: "Deployment", command: "serve", automount: true, rbac: true,
			secretKeys: []string{"waldur_api_token_file", "git.token_file", "keycloak_password_file"}, replicas: 2, strategy: "RollingUpdate"},
	}
	for _, tc := range cases {
		t.Run(tc.overlay, func(t *testing.T) {
			objs, err := build(filepath.Join("deploy", "overlays", tc.overlay))
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				if o.GetKind() == "Secret" {
					if _, ok := o.Object["data"]; ok {
						t.Errorf("Secret %s carries data", o.GetName())
					}
					if _, ok := o.Object["stringData"]; ok {
						t.Errorf("Secret %s carries stringData", o.GetName())
					}
				}
			}

			w := one(t, objs, tc.workload)
			ns := w.GetNamespace()
			if ns == "" || one(t, objs, "Namespace").GetName() != ns {
				t.Errorf("the %s's namespace %q is not the Namespace of the overlay", tc.workload, ns)
			}
			spec := w.Object["spec"].(map[string]any)
			var pod map[string]any
			var jobDeadline int64 // activeDeadlineSeconds of a CronJob's Jobs
			if tc.workload == "CronJob" {
				if spec["concurrencyPolicy"] != "Forbid" {
					t.Errorf("concurrencyPolicy %v, want Forbid", spec["concurrencyPolicy"])
				}
				for _, k := range []string{"startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"} {
					if n, ok := spec[k].(int64); !ok || n <= 0 {
						t.Errorf("%s is %v, want a positive number", k, spec[k])
					}
				}
				if n, ok := field(t, spec, "jobTemplate", "spec", "backoffLimit").(int64); !ok || n > 1 {
					t.Errorf("backoffLimit %v, want 0 or 1: a failed run must not hammer", n)
				}
				n, ok := field(t, spec, "jobTemplate", "spec", "activeDeadlineSeconds").(int64)
				if !ok || n <= 0 {
					t.Errorf("activeDeadlineSeconds %v, want a positive limit", n)
				}
				jobDeadline = n
				pod = field(t, spec, "jobTemplate", "spec", "template", "spec").(map[string]any)
			} else {
				if spec["replicas"] != tc.replicas || field(t, spec, "strategy", "type") != tc.strategy {
					t.Errorf("Deployment: replicas %v, strategy %v; want %d, %s", spec["replicas"], spec["strategy"], tc.replicas, tc.strategy)
				}
				for _, o := range objs {
					if o.GetKind() == "CronJob" {
						t.Errorf("CronJob %s runs beside the Deployment", o.GetName())
					}
				}
				pod = field(t, spec, "template", "spec").(map[string]any)
			}
			psc := field(t, pod, "securityContext").(map[string]any)
			if psc["runAsNonRoot"] != true || psc["runAsUser"] != int64(65532) {
				t.Errorf("pod securityContext %v: want runAsNonRoot and runAsUser 65532", psc)
			}
			if field(t, psc, "seccompProfile", "type") != "RuntimeDefault" {
				t.Errorf("pod seccompProfile %v, want RuntimeDefault", psc["seccompProfile"])
			}
			if pod["automountServiceAccountToken"] != tc.automount {
				t.Errorf("pod automountServiceAccountToken %v, want %v", pod["automountServiceAccountToken"], tc.automount)
			}

			volumes := map[string]map[string]any{}
			for _, v := range field(t, pod, "volumes").([]any) {
				vm := v.(map[string]any)
				volumes[vm["name"].(string)] = vm
				if s, ok := vm["secret"].(map[string]any); ok && s["optional"] != false {
					t.Errorf("Secret volume %s: optional is %v, want false", vm["name"], s["optional"])
				}
			}

			containers := field(t, pod, "containers").([]any)
			if len(containers) != 1 {
				t.Fatalf("want one container, got %d", len(containers))
			}
			c := containers[0].(map[string]any)
			csc := field(t, c, "securityContext").(map[string]any)
			for k, want := range map[string]any{"runAsNonRoot": true, "runAsUser": int64(65532), "readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false} {
				if csc[k] != want {
					t.Errorf("container securityContext.%s is %v, want %v", k, csc[k], want)
				}
			}
			if !reflect.DeepEqual(field(t, csc, "capabilities", "drop"), []any{"ALL"}) {
				t.Errorf("capabilities.drop %v, want [ALL]", field(t, csc, "capabilities", "drop"))
			}
			if field(t, csc, "seccompProfile", "type") != "RuntimeDefault" {
				t.Errorf("container seccompProfile %v, want RuntimeDefault", csc["seccompProfile"])
			}
			for _, kind := range []string{"requests", "limits"} {
				for _, res := range []string{"cpu", "memory"} {
					if v, _ := field(t, c, "resources", kind).(map[string]any)[res].(string); v == "" {
						t.Errorf("resources.%s.%s is not set", kind, res)
					}
				}
			}
			image, _ := c["image"].(string)
			repo, tag, ok := strings.Cut(image, ":")
			if repo != "ghcr.io/waldur/waldur-gitops" || !ok || tag == "" || tag == "latest" {
				t.Errorf("image %q: want ghcr.io/waldur/waldur-gitops with a fixed tag", image)
			}

			args := field(t, c, "args").([]any)
			at := slices.Index(args, any("--config"))
			if len(args) < 3 || args[0] != tc.command || at < 1 || at+1 >= len(args) {
				t.Fatalf("args %v, want [%s --config <file> …]", args, tc.command)
			}
			mounts := field(t, c, "volumeMounts").([]any)
			for _, dir := range []string{"/tmp"} {
				if v, _ := mountedVolume(mounts, volumes, dir+"/x"); v == nil || v["emptyDir"] == nil {
					t.Errorf("%s is not an emptyDir", dir)
				}
			}

			// The config: the generated ConfigMap (hash-suffixed, so that
			// an edit changes the CronJob) mounted where --config points.
			cfgFile := args[at+1].(string)
			cmVol, key := mountedVolume(mounts, volumes, cfgFile)
			if cmVol == nil || cmVol["configMap"] == nil {
				t.Fatalf("--config %s is not in a mounted ConfigMap", cfgFile)
			}
			cm := one(t, objs, "ConfigMap")
			if cmName := field(t, cmVol, "configMap", "name"); cmName != cm.GetName() || !strings.HasPrefix(cm.GetName(), "waldur-gitops-config-") {
				t.Errorf("the %s mounts ConfigMap %v, the overlay generates %s (want the hash-suffixed waldur-gitops-config)", tc.workload, cmName, cm.GetName())
			}
			if cm.GetNamespace() != ns {
				t.Errorf("ConfigMap in namespace %q, %s in %q", cm.GetNamespace(), tc.workload, ns)
			}
			text, ok := field(t, cm.Object, "data").(map[string]any)[key].(string)
			if !ok {
				t.Fatalf("ConfigMap %s has no key %s", cm.GetName(), key)
			}
			tmp := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			// The secret files under /var/run/secrets do not exist here:
			// loading must not need them.
			cfg, err := config.Load(tmp)
			if err != nil {
				t.Fatalf("the config in ConfigMap %s does not load: %v", cm.GetName(), err)
			}
			if len(cfg.Warnings) > 0 {
				t.Errorf("the config loads with warnings: %v", cfg.Warnings)
			}
			if tc.command == "sync" && cfg.Git.URL == "" {
				t.Error("sync needs git.url")
			}
			// The run stops itself before Kubernetes kills the Job, with a
			// minute left for its report and metrics.
			if jobDeadline > 0 {
				run := config.DefaultRunTimeout
				if cfg.RunDeadline() > 0 {
					run = cfg.RunDeadline()
				}
				if i := slices.Index(args, any("--timeout")); i >= 0 && i+1 < len(args) {
					if run, err = time.ParseDuration(args[i+1].(string)); err != nil {
						t.Errorf("--timeout: %v", err)
					}
				}
				if left := time.Duration(jobDeadline)*time.Second - run; left < time.Minute {
					t.Errorf("the run's deadline of %s leaves %s of activeDeadlineSeconds %d, want a minute", run, left, jobDeadline)
				}
			}
			// Every credential is a file in a mounted, required Secret.
			files := map[string]string{}
			addFile := func(key, p string) {
				if p != "" {
					files[key] = p
				}
			}
			for _, k := range []struct{ key, p string }{
				{"git.password_file", cfg.Git.PasswordFile}, {"git.token_file", cfg.Git.TokenFile},
				{"git.ssh_key_file", cfg.Git.SSHKeyFile}, {"git.known_hosts_file", cfg.Git.KnownHostsFile},
				{"git.signing_key_file", cfg.Git.SigningKeyFile},
			} {
				addFile(k.key, k.p)
			}
			if cfg.Git.PasswordEnv != "" || cfg.Git.TokenEnv != "" {
				t.Error("git credentials come from the environment, want files from Secrets")
			}
			for _, o := range cfg.Offerings {
				if o.WaldurAPIToken != "" {
					t.Errorf("offering %s: waldur_api_token is inline", o.Name)
				}
				addFile("waldur_api_token_file", o.WaldurAPITokenFile)
				kc := o.Settings.Common().Keycloak
				if kc.Password != "" || kc.ClientSecret != "" {
					t.Errorf("offering %s: a Keycloak secret is inline", o.Name)
				}
				addFile("keycloak_password_file", kc.PasswordFile)
				addFile("client_secret_file", kc.ClientSecretFile)
			}
			for _, k := range tc.secretKeys {
				if files[k] == "" {
					t.Errorf("config key %s is not set", k)
				}
			}
			for k, p := range files {
				vol, inside := mountedVolume(mounts, volumes, p)
				if vol == nil || vol["secret"] == nil || inside == "" || strings.Contains(inside, "/") {
					t.Errorf("%s %s is not a key of a mounted Secret", k, p)
				}
			}
			if cfg.Report != "" {
				if v, _ := mountedVolume(mounts, volumes, cfg.Report); v == nil || v["emptyDir"] == nil {
					t.Errorf("report %s is not in a mounted emptyDir", cfg.Report)
				}
			}

			// Identity and API access.
			saName, _ := pod["serviceAccountName"].(string)
			sa := one(t, objs, "ServiceAccount")
			if sa.GetName() != saName || sa.GetNamespace() != ns {
				t.Errorf("the workload runs as %s/%s, the overlay defines ServiceAccount %s/%s", ns, saName, sa.GetNamespace(), sa.GetName())
			}
			if sa.Object["automountServiceAccountToken"] != tc.automount {
				t.Errorf("ServiceAccount automountServiceAccountToken %v, want %v", sa.Object["automountServiceAccountToken"], tc.automount)
			}
			if tc.command == "serve" {
				checkServe(t, objs, c, args)
			}
			var rbac []string
			for _, o := range objs {
				if slices.Contains(rbacKinds, o.GetKind()) {
					rbac = append(rbac, o.GetKind()+" "+o.GetName())
				}
			}
			if !tc.rbac {
				if len(rbac) > 0 {
					t.Errorf("GitOps mode needs no API access, but the overlay grants %v", rbac)
				}
				return
			}
			if tc.command == "serve" {
				checkLeaseRBAC(t, objs, rbac, saName, ns)
				checkHA(t, objs, pod, args)
				return
			}
			role := one(t, objs, "ClusterRole")
			if !reflect.DeepEqual(role.Object["rules"], wantRules) {
				t.Errorf("ClusterRole %s rules differ from rbac/apply.yaml:\n%v\n%v", role.GetName(), role.Object["rules"], wantRules)
			}
			crb := one(t, objs, "ClusterRoleBinding")
			if field(t, crb.Object, "roleRef", "kind") != "ClusterRole" || field(t, crb.Object, "roleRef", "name") != role.GetName() {
				t.Errorf("ClusterRoleBinding %s refers to %v, want ClusterRole %s", crb.GetName(), crb.Object["roleRef"], role.GetName())
			}
			subjects := field(t, crb.Object, "subjects").([]any)
			want := map[string]any{"kind": "ServiceAccount", "name": saName, "namespace": ns}
			if len(subjects) != 1 || !reflect.DeepEqual(subjects[0], want) {
				t.Errorf("ClusterRoleBinding subjects %v, want only %v", subjects, want)
			}
			checkStateRBAC(t, objs, saName, ns)
			if len(rbac) != 4 {
				t.Errorf("direct mode grants %v, want only the ClusterRole, the Keycloak state Role and their bindings", rbac)
			}
		})
	}
}

// checkServe: the Deployment listens where its probes and the Service point,
// and probes /livez for liveness and readiness: /healthz fails after a failed
// run, and an unready pod would drop out of the Service Prometheus scrapes.
func checkServe(t *testing.T, objs []*unstructured.Unstructured, c map[string]any, args []any) {
	t.Helper()
	at := slices.Index(args, any("--listen"))
	if at < 0 || at+1 >= len(args) || args[at+1] != ":9090" {
		t.Errorf("args %v: want --listen :9090", args)
	}
	ports := field(t, c, "ports").([]any)
	if len(ports) != 1 || field(t, ports[0].(map[string]any), "containerPort") != int64(9090) {
		t.Fatalf("container ports %v, want 9090", ports)
	}
	portName := field(t, ports[0].(map[string]any), "name")
	ready := "/livez"
	if slices.Contains(args, any("--leader-elect")) {
		ready = "/readyz" // a standby is ready; a stopping pod is not
	}
	for probe, path := range map[string]string{"livenessProbe": "/livez", "readinessProbe": ready} {
		if field(t, c, probe, "httpGet", "path") != path || field(t, c, probe, "httpGet", "port") != portName {
			t.Errorf("%s %v, want GET %s on port %v", probe, c[probe], path, portName)
		}
	}
	svc := one(t, objs, "Service")
	svcPorts := field(t, svc.Object, "spec", "ports").([]any)
	if len(svcPorts) != 1 || field(t, svcPorts[0].(map[string]any), "targetPort") != portName {
		t.Errorf("Service ports %v, want one targeting %v", svcPorts, portName)
	}
}

// checkLeaseRBAC: serve --leader-elect may get, create and update Leases in
// its own namespace, and nothing else anywhere.
func checkLeaseRBAC(t *testing.T, objs []*unstructured.Unstructured, rbac []string, saName, ns string) {
	t.Helper()
	role := one(t, objs, "Role")
	want := []any{map[string]any{"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"}, "verbs": []any{"get", "create", "update"}}}
	if role.GetNamespace() != ns || !reflect.DeepEqual(role.Object["rules"], want) {
		t.Errorf("Role %s/%s rules %v, want %v", role.GetNamespace(), role.GetName(), role.Object["rules"], want)
	}
	rb := one(t, objs, "RoleBinding")
	if rb.GetNamespace() != ns || field(t, rb.Object, "roleRef", "kind") != "Role" || field(t, rb.Object, "roleRef", "name") != role.GetName() {
		t.Errorf("RoleBinding %s refers to %v, want Role %s", rb.GetName(), rb.Object["roleRef"], role.GetName())
	}
	subjects := field(t, rb.Object, "subjects").([]any)
	if s := map[string]any{"kind": "ServiceAccount", "name": saName, "namespace": ns}; len(subjects) != 1 || !reflect.DeepEqual(subjects[0], s) {
		t.Errorf("RoleBinding subjects %v, want only %v", subjects, s)
	}
	if len(rbac) != 2 {
		t.Errorf("serve-ha grants %v, want only the Lease Role and its binding", rbac)
	}
}

// checkHA: the replicas elect a leader, know their pod name and namespace
// from the downward API, prefer different nodes, and a drain leaves one.
func checkHA(t *testing.T, objs []*unstructured.Unstructured, pod map[string]any, args []any) {
	t.Helper()
	if !slices.Contains(args, any("--leader-elect")) {
		t.Errorf("args %v lack --leader-elect", args)
	}
	c := field(t, pod, "containers").([]any)[0].(map[string]any)
	env := map[string]any{}
	for _, e := range field(t, c, "env").([]any) {
		em := e.(map[string]any)
		env[em["name"].(string)] = em["valueFrom"]
	}
	for name, path := range map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"} {
		if vf, _ := env[name].(map[string]any); vf == nil || field(t, vf, "fieldRef", "fieldPath") != path {
			t.Errorf("env %s is %v, want the downward API's %s", name, env[name], path)
		}
	}
	terms := field(t, pod, "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution").([]any)
	if len(terms) != 1 || field(t, terms[0].(map[string]any), "podAffinityTerm", "topologyKey") != "kubernetes.io/hostname" {
		t.Errorf("pod anti-affinity %v, want one term by host name", terms)
	}
	pdb := one(t, objs, "PodDisruptionBudget")
	if field(t, pdb.Object, "spec", "minAvailable") != int64(1) {
		t.Errorf("PodDisruptionBudget %v, want minAvailable 1", pdb.Object["spec"])
	}
}

// checkStateRBAC: direct mode may get, create and update the ConfigMaps of
// the Keycloak memory (publish.ConfigMapStore) in its own namespace, bound to
// its ServiceAccount, and nothing else with that Role.
func checkStateRBAC(t *testing.T, objs []*unstructured.Unstructured, sa, ns string) {
	t.Helper()
	role := one(t, objs, "Role")
	if role.GetNamespace() != ns {
		t.Errorf("Role %s is in %q, want the CronJob's namespace %q", role.GetName(), role.GetNamespace(), ns)
	}
	verbs := map[string]bool{}
	for _, r := range field(t, role.Object, "rules").([]any) {
		rule := r.(map[string]any)
		if !reflect.DeepEqual(rule["resources"], []any{"configmaps"}) || !reflect.DeepEqual(rule["apiGroups"], []any{""}) {
			t.Errorf("Role %s grants %v, want only configmaps", role.GetName(), rule)
		}
		names, _ := rule["resourceNames"].([]any)
		for _, v := range rule["verbs"].([]any) {
			verbs[v.(string)] = true
			if v != "create" && (len(names) == 0 || names[0] != "waldur-gitops-keycloak-state") {
				t.Errorf("Role %s: %s is not limited to the state ConfigMaps (%v)", role.GetName(), v, names)
			}
		}
	}
	if !reflect.DeepEqual(verbs, map[string]bool{"get": true, "create": true, "update": true}) {
		t.Errorf("Role %s verbs %v, want get, create, update", role.GetName(), verbs)
	}
	rb := one(t, objs, "RoleBinding")
	want := map[string]any{"kind": "ServiceAccount", "name": sa, "namespace": ns}
	if field(t, rb.Object, "roleRef", "name") != role.GetName() || !reflect.DeepEqual(field(t, rb.Object, "subjects"), []any{want}) {
		t.Errorf("RoleBinding %s: roleRef %v subjects %v", rb.GetName(), rb.Object["roleRef"], rb.Object["subjects"])
	}
}
