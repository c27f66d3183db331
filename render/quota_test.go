package render

import (
	"fmt"
	"math/big"
	"strings"
	"testing"

	kresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/waldur"
)

// quotaProfile is one backend type with components of every kind and, per
// component, the quota keys it sets and the factor from the Waldur value to the
// key's base unit (cores, bytes, units).
type quotaProfile struct {
	backend, settings, components string
	keys                          map[string]map[string]*big.Rat
}

var (
	one   = big.NewRat(1, 1)
	gibR  = big.NewRat(1<<30, 1)
	gib2R = big.NewRat(1<<31, 1)
)

func quotaProfiles() []quotaProfile {
	comps := "  backend_components:\n" +
		"    cpu: {type: cpu, measured_unit: cores, accounting_type: limit, label: CPU}\n" +
		"    ram: {type: ram, measured_unit: GiB, accounting_type: limit, label: RAM}\n" +
		"    storage: {type: storage, measured_unit: GiB, accounting_type: limit, label: Storage}\n" +
		"    gpu: {type: gpu, measured_unit: GPU, accounting_type: limit, label: GPU}\n"
	okdComps := "  backend_components:\n" +
		"    cpu: {measured_unit: cores, accounting_type: limit, label: CPU}\n" +
		"    memory: {measured_unit: GiB, accounting_type: limit, label: Memory}\n" +
		"    storage: {measured_unit: GiB, accounting_type: limit, label: Storage}\n" +
		"    pods: {measured_unit: pods, accounting_type: limit, label: Pods}\n"
	return []quotaProfile{
		{backend: "k8s-ut-namespace", components: comps, keys: map[string]map[string]*big.Rat{
			"cpu": {"cpu": one}, "ram": {"memory": gibR}, "storage": {"storage": gibR}, "gpu": {"gpu": one},
		}},
		{backend: "namespace", components: comps, keys: map[string]map[string]*big.Rat{
			"cpu": {"limits.cpu": one}, "ram": {"limits.memory": gibR}, "storage": {"requests.storage": gibR}, "gpu": {"requests.nvidia.com/gpu": one},
		}},
		{backend: "okd", components: okdComps, keys: map[string]map[string]*big.Rat{
			"cpu":     {"requests.cpu": one, "limits.cpu": big.NewRat(2, 1)},
			"memory":  {"requests.memory": gibR, "limits.memory": gib2R},
			"storage": {"requests.storage": gibR}, "pods": {"pods": one},
		}},
		{backend: "rancher", settings: "cluster_id: c-m-1\n", components: comps, keys: map[string]map[string]*big.Rat{
			"cpu": {"limits.cpu": one}, "ram": {"limits.memory": gibR}, "storage": {"requests.storage": gibR}, "gpu": {"requests.nvidia.com/gpu": one},
		}},
	}
}

// renderedQuota returns the quota map a tenant carries: ManagedNamespace
// spec.quota or ResourceQuota spec.hard; nil when the resource was not rendered.
func renderedQuota(t *testing.T, res *Result) map[string]any {
	t.Helper()
	for _, tn := range res.Tenants {
		for _, o := range tn.Objects {
			switch o.Kind() {
			case "ManagedNamespace":
				return nested(o, "spec", "quota")
			case "ResourceQuota":
				return nested(o, "spec", "hard")
			}
		}
	}
	return nil
}

// exactValue parses a rendered quantity into an exact rational.
func exactValue(t *testing.T, s string) *big.Rat {
	t.Helper()
	q, err := kresource.ParseQuantity(s)
	if err != nil {
		t.Fatalf("rendered quantity %q does not parse: %v", s, err)
	}
	d := q.AsDec()
	r := new(big.Rat).SetInt(d.UnscaledBig())
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(int(d.Scale())))), nil)
	if d.Scale() > 0 {
		return r.Quo(r, new(big.Rat).SetInt(scale))
	}
	return r.Mul(r, new(big.Rat).SetInt(scale))
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

// checkQuota asserts that every quota value of a rendered resource stands for
// exactly the limit times the key's factor: no negative, wrapped or rounded value.
func checkQuota(t *testing.T, p quotaProfile, l waldur.Limits, quota map[string]any) {
	t.Helper()
	for comp, amount := range l {
		want, ok := new(big.Rat).SetString(string(amount))
		if !ok {
			t.Fatalf("%s: %s=%q rendered although it is no number: %v", p.backend, comp, amount, quota)
		}
		for key, factor := range p.keys[comp] {
			s, ok := quota[key].(string)
			if !ok {
				t.Fatalf("%s: %s=%s rendered without quota key %s: %v", p.backend, comp, amount, key, quota)
			}
			got := exactValue(t, s)
			if got.Sign() < 0 {
				t.Fatalf("%s: %s=%s rendered as negative %s = %s", p.backend, comp, amount, key, s)
			}
			if exp := new(big.Rat).Mul(want, factor); got.Cmp(exp) != 0 {
				t.Fatalf("%s: %s=%s rendered as %s = %s (%s base units), want exactly %s", p.backend, comp, amount, key, s, got.FloatString(6), exp.FloatString(6))
			}
		}
	}
}

// FuzzQuotaConversion feeds arbitrary limits to every profile's conversion.
// Either the resource is skipped with the component named, or every quota value
// is a Kubernetes quantity equal to the limit exactly: never negative, wrapped
// or silently rounded.
func FuzzQuotaConversion(f *testing.F) {
	for _, s := range []string{"4", "2.5", "1.5", "0", "1e16", "9223372036854775807", "9007199254740993", "-1", "NaN", "Inf",
		"0.0005", "0.1", "2.3", "1e-400", "0x10", "1e308", "8589934592", "8589934591.5", "9223372036854775.807", "4.0000000000000001"} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(1))
		f.Add(s, uint8(2))
		f.Add(s, uint8(3))
	}
	profiles := quotaProfiles()
	cfgs := make([]*config.Config, len(profiles))
	for i, p := range profiles {
		cfgs[i] = mustConfig(f, p.backend, p.settings, p.components)
	}
	f.Fuzz(func(t *testing.T, amount string, which uint8) {
		for i, p := range profiles {
			comps := sortedKeys(p.keys)
			comp := comps[int(which)%len(comps)]
			l := waldur.Limits{comp: waldur.Amount(amount)}
			for _, c := range comps {
				if c != comp {
					l[c] = "2"
				}
			}
			r := resource(1, "fuzz", l)
			res := mustRender(t, cfgs[i], state([]waldur.Resource{r}, nil))
			if why, skipped := res.Skipped[r.UUID]; skipped {
				if !strings.Contains(why, comp) {
					t.Fatalf("%s: %s=%q skipped without naming the component: %s", p.backend, comp, amount, why)
				}
				continue
			}
			checkQuota(t, p, l, renderedQuota(t, res))
		}
	})
}

// TestQuotaRefusals: limits a profile cannot hold exactly are refused with the
// component named; the other resource of the offering still renders.
func TestQuotaRefusals(t *testing.T) {
	type refusal struct{ comp, amount, want string }
	common := []refusal{
		{"cpu", "1e16", "does not fit"},
		{"cpu", "-1", "negative"},
		{"cpu", "-0.5", "negative"},
		{"cpu", "NaN", "not a number"},
		{"cpu", "Inf", "not a number"},
		{"cpu", "-Inf", "not a number"},
		{"cpu", "1e400", "not a number"},
		{"cpu", "0x10", "not a number"},
		{"cpu", "0x1p4", "not a decimal number"},
		{"cpu", "1e-400", "held exactly (it would become 0)"},
		{"cpu", "1e-1000000000", "out of range"},
		{"cpu", "9007199254740993", "more digits than can be held exactly"},
		{"cpu", "0.0005", "finer than the millicore"},
		{"storage", "0.1", "not a whole number of bytes"},
		{"storage", "1e10", "does not fit"},
	}
	perProfile := map[string][]refusal{
		"k8s-ut-namespace": {{"gpu", "2.5", "whole number"}, {"ram", "0.3", "not a whole number of bytes"}},
		"namespace":        {{"gpu", "2.5", "whole number"}, {"ram", "8589934592", "does not fit"}},
		"okd":              {{"pods", "2.5", "whole number"}, {"memory", "4294967296", "does not fit"}, {"cpu", "4611686018427388", "does not fit"}},
		"rancher":          {{"gpu", "2.5", "whole number"}, {"ram", "8589934592", "does not fit"}},
	}
	for _, p := range quotaProfiles() {
		cfg := mustConfig(t, p.backend, p.settings, p.components)
		for _, rf := range append(append([]refusal{}, common...), perProfile[p.backend]...) {
			t.Run(p.backend+"/"+rf.comp+"="+rf.amount, func(t *testing.T) {
				bad := resource(1, "bad", waldur.Limits{rf.comp: waldur.Amount(rf.amount)})
				good := resource(2, "good", waldur.Limits{"cpu": "2", "storage": "10"})
				res := mustRender(t, cfg, state([]waldur.Resource{bad, good}, nil))
				why, skipped := res.Skipped[bad.UUID]
				if !skipped {
					t.Fatalf("rendered: %v", renderedQuota(t, res))
				}
				if !strings.Contains(why, rf.comp) || !strings.Contains(why, rf.want) {
					t.Errorf("reason %q, want it to name %s and say %q", why, rf.comp, rf.want)
				}
				if _, skipped := res.Skipped[good.UUID]; skipped || len(res.Tenants) == 0 {
					t.Errorf("the good resource was not rendered: %v", res.Skipped)
				}
			})
		}
	}
}

// TestFractionalLimitsExact: Waldur 8.1.3 sends fractional limits. Each profile
// renders them exactly, in its own units; what the site agent's Rancher plugin
// truncates (2.3 cores → 2299m, 1.5 GiB storage → 1024Mi) is exact here.
func TestFractionalLimitsExact(t *testing.T) {
	tests := []struct {
		backend string
		limits  waldur.Limits
		want    map[string]string
	}{
		{"k8s-ut-namespace", limits("cpu", 2.5, "ram", 1.5, "storage", 0.25, "gpu", 1),
			map[string]string{"cpu": "2.5", "memory": "1.5Gi", "storage": "0.25Gi", "gpu": "1"}},
		{"namespace", limits("cpu", 0.125, "ram", 1.5, "storage", 100.5),
			map[string]string{"limits.cpu": "0.125", "limits.memory": "1.5Gi", "requests.storage": "100.5Gi"}},
		{"okd", limits("cpu", 2.3, "memory", 1.5, "storage", 0.5, "pods", 3),
			map[string]string{"requests.cpu": "2.3", "limits.cpu": "4.6", "requests.memory": "1.5Gi", "limits.memory": "3Gi", "requests.storage": "0.5Gi", "pods": "3"}},
		{"rancher", limits("cpu", 2.3, "ram", 1.5, "storage", 1.5, "gpu", 2),
			map[string]string{"limits.cpu": "2300m", "limits.memory": "1536Mi", "requests.storage": "1536Mi", "requests.nvidia.com/gpu": "2"}},
		{"rancher", limits("cpu", 0.001, "ram", 0.0001220703125),
			map[string]string{"limits.cpu": "1m", "limits.memory": "0.0001220703125Gi"}},
	}
	profiles := map[string]quotaProfile{}
	for _, p := range quotaProfiles() {
		profiles[p.backend] = p
	}
	for _, tt := range tests {
		t.Run(tt.backend+fmt.Sprint(tt.limits), func(t *testing.T) {
			p := profiles[tt.backend]
			res := mustRender(t, mustConfig(t, p.backend, p.settings, p.components), state([]waldur.Resource{resource(1, "frac", tt.limits)}, nil))
			if len(res.Skipped) > 0 {
				t.Fatalf("skipped: %v", res.Skipped)
			}
			q := renderedQuota(t, res)
			for k, v := range tt.want {
				if q[k] != v {
					t.Errorf("%s = %v, want %s", k, q[k], v)
				}
			}
			if len(q) != len(tt.want) {
				t.Errorf("quota %v, want %v", q, tt.want)
			}
			checkQuota(t, p, tt.limits, q)
		})
	}
}

// TestFractionalGolden renders cpu 2.5 and memory 1.5 GiB with every profile.
func TestFractionalGolden(t *testing.T) {
	for _, p := range quotaProfiles() {
		t.Run(p.backend, func(t *testing.T) {
			mem := "ram"
			if p.backend == "okd" {
				mem = "memory"
			}
			cfg := mustConfig(t, p.backend, p.settings, p.components)
			res := mustRender(t, cfg, state([]waldur.Resource{resource(1, "fractional", limits("cpu", 2.5, mem, 1.5))}, nil, member("alice", "PROJECT.MANAGER")))
			golden(t, goldenDir(p.backend)+"/fractional", dump(res))
		})
	}
}

func goldenDir(backend string) string {
	if backend == "k8s-ut-namespace" {
		return "k8s-ut"
	}
	return backend
}

// TestDefaultLimitRange: the container defaults are capped at the quota so one
// default container always fits, and a resource the quota does not constrain,
// or constrains to zero, gets none.
func TestDefaultLimitRange(t *testing.T) {
	tests := []struct {
		quota       map[string]string
		def, defReq map[string]string
	}{
		{map[string]string{"limits.cpu": "4", "limits.memory": "8Gi"}, map[string]string{"cpu": "1", "memory": "1Gi"}, map[string]string{"cpu": "100m", "memory": "128Mi"}},
		{map[string]string{"limits.cpu": "0.5", "limits.memory": "64Mi"}, map[string]string{"cpu": "500m", "memory": "64Mi"}, map[string]string{"cpu": "100m", "memory": "64Mi"}},
		{map[string]string{"requests.cpu": "50m"}, map[string]string{"cpu": "1"}, map[string]string{"cpu": "50m"}},
		{map[string]string{"cpu": "2"}, map[string]string{"cpu": "1"}, map[string]string{"cpu": "100m"}},
		{map[string]string{"limits.cpu": "0", "limits.memory": "1Gi"}, map[string]string{"memory": "1Gi"}, map[string]string{"memory": "128Mi"}},
		{map[string]string{"requests.storage": "10Gi", "requests.nvidia.com/gpu": "1"}, nil, nil},
		{map[string]string{"limits.cpu": "0"}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.quota), func(t *testing.T) {
			lr := defaultLimitRange(tt.quota)
			if tt.def == nil {
				if lr != nil {
					t.Fatalf("got %+v, want none", lr)
				}
				return
			}
			if lr == nil || fmt.Sprint(lr.Default) != fmt.Sprint(tt.def) || fmt.Sprint(lr.DefaultRequest) != fmt.Sprint(tt.defReq) {
				t.Errorf("got %+v, want default %v request %v", lr, tt.def, tt.defReq)
			}
		})
	}
}
