package quotasafe

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/waldur"
)

func quota(name string, hard, used map[string]string) kube.Quota {
	q := kube.Quota{Namespace: "waldur-x", Name: name, Hard: map[string]resource.Quantity{}, Used: map[string]resource.Quantity{}}
	for k, v := range hard {
		q.Hard[k] = resource.MustParse(v)
	}
	for k, v := range used {
		q.Used[k] = resource.MustParse(v)
	}
	return q
}

func TestFind(t *testing.T) {
	own := quota("waldur-quota", map[string]string{"requests.cpu": "4", "requests.storage": "100Gi"}, map[string]string{"requests.cpu": "1500m", "requests.storage": "30Gi"})
	for _, tc := range []struct {
		name      string
		new       map[string]string
		quotaName string
		live      []kube.Quota
		want      []string // Cut.String of each
		backend   string
	}{
		{"raise", map[string]string{"requests.cpu": "8", "requests.storage": "200Gi"}, "waldur-quota", []kube.Quota{own}, nil, ""},
		{"cut above usage", map[string]string{"requests.cpu": "2", "requests.storage": "30Gi"}, "waldur-quota", []kube.Quota{own}, nil, ""},
		{"cut below usage", map[string]string{"requests.cpu": "1", "requests.storage": "10Gi"}, "waldur-quota", []kube.Quota{own},
			[]string{"requests.cpu used 1500m, new 1, in place 4", "requests.storage used 30Gi, new 10Gi, in place 100Gi"}, ""},
		{"equal quantities in other units", map[string]string{"requests.cpu": "4000m"}, "waldur-quota", []kube.Quota{own}, nil, ""},
		{"key not limited yet", map[string]string{"pods": "1"}, "waldur-quota", []kube.Quota{own}, nil, ""},
		{"no quota in the namespace", map[string]string{"requests.cpu": "1"}, "waldur-quota", nil, nil, ""},
		{"usage not reported", map[string]string{"requests.cpu": "1"}, "waldur-quota",
			[]kube.Quota{quota("waldur-quota", map[string]string{"requests.cpu": "4"}, nil)}, []string{"requests.cpu used not reported yet, new 1, in place 4"}, ""},
		{"another controller's quota: the highest counts", map[string]string{"requests.cpu": "2"}, "",
			[]kube.Quota{quota("a", map[string]string{"requests.cpu": "3"}, map[string]string{"requests.cpu": "2500m"}), quota("b", map[string]string{"requests.cpu": "6"}, map[string]string{"requests.cpu": "2500m"})},
			[]string{"requests.cpu used 2500m, new 2, in place 6"}, ""},
		{"the profile's quota wins over a higher one", map[string]string{"requests.cpu": "2"}, "waldur-quota",
			[]kube.Quota{quota("extra", map[string]string{"requests.cpu": "1"}, map[string]string{"requests.cpu": "3"}), own}, nil, ""},
		{"managednamespace keys", map[string]string{"storage": "10Gi", "cpu": "8"}, "",
			[]kube.Quota{quota("managed-quota", map[string]string{"requests.storage": "100Gi", "limits.cpu": "4"}, map[string]string{"requests.storage": "30Gi", "limits.cpu": "1"})},
			[]string{"requests.storage used 30Gi, new 10Gi, in place 100Gi"}, "k8s-ut-namespace"},
		{"other profiles keep their keys", map[string]string{"storage": "10Gi"}, "",
			[]kube.Quota{quota("managed-quota", map[string]string{"requests.storage": "100Gi"}, map[string]string{"requests.storage": "30Gi"})}, nil, "namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cuts, err := Find(tc.new, tc.quotaName, tc.live, LiveKey(tc.backend))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range cuts {
				got = append(got, c.String())
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("cuts %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := Find(map[string]string{"requests.cpu": "lots"}, "", []kube.Quota{own}, nil); err == nil || !strings.Contains(err.Error(), `requests.cpu="lots"`) {
		t.Errorf("bad quantity: %v", err)
	}
}

func TestKeepReasonLowers(t *testing.T) {
	cuts, _ := Find(map[string]string{"requests.storage": "10Gi"}, "q", []kube.Quota{quota("q", map[string]string{"requests.storage": "100Gi"}, map[string]string{"requests.storage": "30Gi"})}, nil)
	if k := Keep(cuts); len(k) != 1 || k["requests.storage"] != "100Gi" {
		t.Errorf("keep %v", k)
	}
	if r := Reason(cuts); r != "waiting for usage to drop below the new quota (quota_shrink: hold): requests.storage used 30Gi, new 10Gi, in place 100Gi" {
		t.Errorf("reason %q", r)
	}
	for _, tc := range []struct {
		name string
		old  waldur.Limits
		new  map[string]float64
		want bool
	}{
		{"lowered", waldur.Limits{"cpu": "4", "ram": "8"}, map[string]float64{"cpu": 2, "ram": 8}, true},
		{"raised", waldur.Limits{"cpu": "4"}, map[string]float64{"cpu": 8}, false},
		{"new component", waldur.Limits{"cpu": "4"}, map[string]float64{"cpu": 4, "gpu": 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Lowers(tc.old, tc.new); got != tc.want {
				t.Errorf("Lowers %v", got)
			}
		})
	}
}
