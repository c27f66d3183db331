package diagnose

import (
	"context"
	"fmt"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/kube"
)

// listNodes is what a capacity pool reads of its cluster.
var listNodes = kube.Access{Verb: "list", Resource: kube.NodesGVR}

// CapacityChecks lists a "capacity nodes" row for every capacity pool whose
// totals come from Nodes: the pool's cluster answers and the server says (a
// SelfSubjectAccessReview, which changes nothing) that the account may list
// Nodes. kubeconfig, when set, replaces the pools' kubeconfigs as it does
// for the cluster checks.
func CapacityChecks(cfg *config.Config, kubeconfig string, open func(kube.Source) (ClusterAPI, error)) []Check {
	var out []Check
	rows := map[string]int{}
	for i := range cfg.Offerings {
		o := &cfg.Offerings[i]
		c := o.Capacity
		if c == nil || !c.NeedsNodes() {
			continue
		}
		if j, ok := rows[c.Pool]; ok {
			out[j].Offerings = append(out[j].Offerings, o.Name)
			continue
		}
		path, ctx := c.Cluster()
		s := kube.Source{Path: path, Context: ctx}
		if kubeconfig != "" {
			s = kube.Source{Path: kubeconfig}
		}
		rows[c.Pool] = len(out)
		out = append(out, capacityCheck(c.Pool, s, open, o.Name))
	}
	return out
}

func capacityCheck(pool string, s kube.Source, open func(kube.Source) (ClusterAPI, error), offering string) Check {
	return Check{Name: "capacity nodes", Target: "pool " + pool + ": " + s.String(), Offerings: []string{offering}, Credential: ClusterCredential(s),
		Run: func(ctx context.Context) (string, error) {
			c, err := open(s)
			if err != nil {
				return "", err
			}
			ok, err := c.Allowed(ctx, listNodes)
			switch {
			case err != nil:
				return "", err
			case !ok:
				return "", fmt.Errorf("this account may not %s: pool %s cannot be totalled and its orders would wait (examples/rbac/capacity.yaml grants it)", listNodes, pool)
			}
			return "may " + listNodes.String(), nil
		}}
}
