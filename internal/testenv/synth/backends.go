package synth

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/waldur"
)

// rancherCluster is the downstream cluster id of the generated rancher offering.
const rancherCluster = "c-m-7synth42"

// sample is what the generator writes for the offerings of one backend
// type: the gpu component, the backend_settings beyond the common ones, and
// the backend id the site agent records for an existing resource. A type
// with no sample gets a plain gpu component, no settings of its own and
// waldur-<slug>.
type sample struct {
	gpu       string
	settings  func(b *strings.Builder, opts Options)
	backendID func(g *generator, res waldur.Resource) string
}

// samples are the built-in backends' samples, by type.
var samples = map[string]sample{
	config.BackendK8sUTNamespace: {
		gpu: "      gpu: {type: gpu, measured_unit: GPUs, accounting_type: limit, label: GPU}\n",
		settings: func(b *strings.Builder, opts Options) {
			b.WriteString("      cr_namespace: waldur-system\n")
			b.WriteString("      namespace_prefix: waldur-\n")
			fmt.Fprintf(b, "      sync_users_to_cr: %t\n", !opts.DisableUserSync)
			b.WriteString("      cr_user_identity_field: email\n")
			b.WriteString("      namespace_annotations:\n        waldur.io/source: synthetic\n")
		},
	},
	config.BackendNamespace: {
		settings: func(b *strings.Builder, _ Options) {
			b.WriteString("      namespace_prefix: waldur-\n")
			b.WriteString("      group_prefix: \"oidc:\"\n")
			b.WriteString("      user_prefix: \"oidc:\"\n")
		},
	},
	config.BackendOKD: {
		settings: func(b *strings.Builder, _ Options) {
			b.WriteString("      namespace_prefix: waldur-\n")
			b.WriteString("      allocation_prefix: alloc-\n")
		},
		backendID: func(_ *generator, res waldur.Resource) string { return "waldur-alloc-" + res.Slug },
	},
	config.BackendRancher: {
		gpu: "      gpu: {type: gpu, k8s_resource: nvidia.com/gpu-h100, measured_unit: GPUs, accounting_type: limit, label: H100 GPU}\n",
		settings: func(b *strings.Builder, _ Options) {
			fmt.Fprintf(b, "      cluster_id: %s\n", rancherCluster)
			b.WriteString("      project_prefix: waldur-\n")
			b.WriteString("      default_role: workloads-manage\n")
		},
		backendID: func(g *generator, _ waldur.Resource) string {
			if chance(g.r, 0.5) {
				// An adopted project: Rancher's own p-xxxxx style id.
				return rancherCluster + ":p-" + strconv.FormatInt(int64(g.serial)+36*36*36*36, 36)
			}
			return ""
		},
	},
}

// defaultGPU is the gpu component of a type whose sample names none.
const defaultGPU = "      gpu: {type: gpu, k8s_resource: nvidia.com/gpu, measured_unit: GPUs, accounting_type: limit, label: GPU}\n"

// backendID is what the site agent records once a resource exists.
func (g *generator) backendID(res waldur.Resource) string {
	if f := samples[g.o.BackendType].backendID; f != nil {
		return f(g, res)
	}
	return "waldur-" + res.Slug
}
