package examples_test

import (
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// TestCronJobMemoryLimitFollowsBenchmarks: the example CronJob's memory limit
// is the one BENCHMARKS.md derives, and the derivation holds: the largest
// peak of the results table plus the stated margin, rounded up to a multiple
// of 64 MiB.
func TestCronJobMemoryLimitFollowsBenchmarks(t *testing.T) {
	raw, err := os.ReadFile("../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start := strings.Index(doc, "\n## Memory of a sync\n")
	if start < 0 {
		t.Fatal(`BENCHMARKS.md has no section "Memory of a sync"`)
	}
	doc = doc[start:]
	if end := strings.Index(doc[1:], "\n## "); end >= 0 {
		doc = doc[:end+1]
	}

	stated := regexp.MustCompile("\\*\\*(\\d+)Mi\\*\\* \\(`examples/deploy/base/cronjob.yaml`").FindStringSubmatch(doc)
	rule := regexp.MustCompile(`largest peak\s+above, ([\d.]+) MiB, plus a margin of (\d+) %`).FindStringSubmatch(doc)
	if stated == nil || rule == nil {
		t.Fatalf("BENCHMARKS.md does not state the limit and its derivation (%q, %q)", stated, rule)
	}
	limitMiB, _ := strconv.Atoi(stated[1])
	peak, _ := strconv.ParseFloat(rule[1], 64)
	margin, _ := strconv.Atoi(rule[2])

	var largest int
	for _, m := range regexp.MustCompile(`\| \*\*(\d+)\*\* \|`).FindAllStringSubmatch(doc, -1) {
		v, _ := strconv.Atoi(m[1])
		largest = max(largest, v)
	}
	if largest == 0 || int(math.Round(peak)) != largest {
		t.Errorf("the stated largest peak %.1f MiB is not the table's largest, %d MiB", peak, largest)
	}
	if want := int(math.Ceil(peak*(1+float64(margin)/100)/64)) * 64; want != limitMiB {
		t.Errorf("%.1f MiB plus %d %%, rounded up to 64 MiB, is %d MiB; BENCHMARKS.md says %d", peak, margin, want, limitMiB)
	}

	cj, err := os.ReadFile("deploy/base/cronjob.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(cj, &obj); err != nil {
		t.Fatal(err)
	}
	c := field(t, obj, "spec", "jobTemplate", "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
	mem, _ := field(t, c, "resources", "limits").(map[string]any)["memory"].(string)
	q, err := resource.ParseQuantity(mem)
	if err != nil {
		t.Fatalf("memory limit %q: %v", mem, err)
	}
	if q.Value() != int64(limitMiB)<<20 {
		t.Errorf("the CronJob's memory limit is %s, BENCHMARKS.md derives %dMi", mem, limitMiB)
	}
}
