package config_test

import (
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/config"
)

func TestOrderAndUsageKeys(t *testing.T) {
	l := mustParse(t, oneOffering("namespace", "", ""))
	o := l.Offerings[0]
	if !o.AutoApproves() || o.OrderDoneOn != config.DoneOnCommit || o.DoneTimeoutSeconds() != 300 {
		t.Errorf("defaults: auto %v done_on %q timeout %d", o.AutoApproves(), o.OrderDoneOn, o.DoneTimeoutSeconds())
	}
	l = mustParse(t, oneOffering("namespace", "", "    auto_approve: false\n    order_done_on: Applied\n    order_done_timeout_seconds: 60\n"+
		"    backend_components:\n      cpu_hours: {accounting_type: usage, measured_from: requests.nvidia.com/gpu}\n"))
	o = l.Offerings[0]
	if o.AutoApproves() || o.OrderDoneOn != config.DoneOnApplied || o.DoneTimeoutSeconds() != 60 || o.BackendComponents["cpu_hours"].MeasuredFrom != "requests.nvidia.com/gpu" {
		t.Errorf("set: %+v", o)
	}

	_, problems := mustFail(t, oneOffering("namespace", "", "    order_done_on: pushed\n    order_done_timeout_seconds: 0\n"+
		"    backend_components:\n      cpu: {accounting_type: limit, measured_from: requests.cpu}\n      gpu_hours: {accounting_type: usage, measured_from: \"not a key\"}\n"))
	for path, want := range map[string]string{
		"offerings[0].order_done_on":                              "must be one of commit, committed, applied",
		"offerings[0].order_done_timeout_seconds":                 "between 1 and 3600",
		"offerings[0].backend_components.cpu.measured_from":       "only a component with accounting_type usage",
		"offerings[0].backend_components.gpu_hours.measured_from": "is not a ResourceQuota key",
	} {
		if p := findProblem(t, problems, path); !strings.Contains(p.Message, want) {
			t.Errorf("%s: %q, want %q", path, p.Message, want)
		}
	}
}

// usage.allocation defaults to peak, takes time_weighted, and refuses anything
// else under its key.
func TestUsageAllocation(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"default", "", config.AllocationPeak},
		{"peak", "usage: {allocation: peak}\n", config.AllocationPeak},
		{"time_weighted", "usage:\n  allocation: time_weighted\n", config.AllocationTimeWeighted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustParse(t, tc.text+oneOffering("namespace", "", ""))
			if l.Usage.Allocation != tc.want {
				t.Errorf("allocation %q, want %q", l.Usage.Allocation, tc.want)
			}
		})
	}
	_, problems := mustFail(t, "usage: {allocation: average}\n"+oneOffering("namespace", "", ""))
	if p := findProblem(t, problems, "usage.allocation"); !strings.Contains(p.Message, `must be peak or time_weighted, got "average"`) {
		t.Errorf("message %q", p.Message)
	}
}

// The site agent's web-STOMP keys are checked under their names.
func TestStompKeys(t *testing.T) {
	_, problems := mustFail(t, oneOffering("namespace", "", "    stomp_enabled: true\n    stomp_ws_port: 70000\n    stomp_ws_path: rmqws\n    stomp_ws_host: wss://mq.example.org\n"))
	for path, want := range map[string]string{
		"offerings[0].stomp_ws_port": "between 1 and 65535",
		"offerings[0].stomp_ws_path": "must start with /",
		"offerings[0].stomp_ws_host": "without scheme, port or path",
	} {
		if p := findProblem(t, problems, path); !strings.Contains(p.Message, want) {
			t.Errorf("%s: %q, want %q", path, p.Message, want)
		}
	}
}
