// Package manifest holds rendered Kubernetes objects in their generic form
// (the JSON data model: map[string]any), checks their metadata, and encodes them
// as deterministic YAML.
package manifest

import (
	"fmt"
	"strings"
)

// Labels and annotations every rendered object carries.
const (
	LabelManagedBy     = "app.kubernetes.io/managed-by"
	ManagedByValue     = "waldur-gitops"
	LabelResourceUUID  = "waldur.io/resource-uuid"
	AnnotationOffering = "waldur.io/offering-uuid"
	AnnotationProject  = "waldur.io/project-uuid"
	AnnotationCustomer = "waldur.io/customer-uuid"
)

// Object is one Kubernetes object in generic form.
type Object map[string]any

// str returns the string at a path of mapping keys, "" when absent.
func (o Object) str(path ...string) string {
	var cur any = map[string]any(o)
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[p]
	}
	s, _ := cur.(string)
	return s
}

// APIVersion returns apiVersion.
func (o Object) APIVersion() string { return o.str("apiVersion") }

// Kind returns kind.
func (o Object) Kind() string { return o.str("kind") }

// Name returns metadata.name.
func (o Object) Name() string { return o.str("metadata", "name") }

// Namespace returns metadata.namespace.
func (o Object) Namespace() string { return o.str("metadata", "namespace") }

// ID names the object as kind/namespace/name (kind/name when cluster-scoped).
func (o Object) ID() string {
	if ns := o.Namespace(); ns != "" {
		return o.Kind() + "/" + ns + "/" + o.Name()
	}
	return o.Kind() + "/" + o.Name()
}

// Metadata returns the metadata mapping, creating it when absent.
func (o Object) Metadata() map[string]any {
	m, ok := o["metadata"].(map[string]any)
	if !ok {
		m = map[string]any{}
		o["metadata"] = m
	}
	return m
}

// SetStrings merges kv into the string map at metadata.<field> (labels or
// annotations); the values in kv win. A field that is absent or null becomes a
// new map; one that holds something else is left alone for Validate to report,
// rather than silently replaced.
func (o Object) SetStrings(field string, kv map[string]string) {
	if len(kv) == 0 {
		return
	}
	md := o.Metadata()
	m, ok := md[field].(map[string]any)
	if !ok {
		if md[field] != nil {
			return
		}
		m = make(map[string]any, len(kv))
		md[field] = m
	}
	for k, v := range kv {
		m[k] = v
	}
}

// The name checks below are hand-written scans rather than regular
// expressions: Validate runs them for every object of every tenant, and at
// 10,000 tenants the regexp engine cost a noticeable share of a no-op's CPU
// (BENCHMARKS.md, "A no-op sync as a CronJob starts it"). Their grammar is
// in each doc comment; names_test.go checks them against the expressions.

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

func isAlnum(c byte) bool { return isLowerAlnum(c) || c >= 'A' && c <= 'Z' }

// isDNSLabel reports whether s matches [a-z0-9]([-a-z0-9]*[a-z0-9])?, of any length.
func isDNSLabel(s string) bool {
	if s == "" || !isLowerAlnum(s[0]) || !isLowerAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isLowerAlnum(c) && c != '-' {
			return false
		}
	}
	return true
}

// isSubdomain reports whether s is one or more DNS labels joined by dots.
func isSubdomain(s string) bool {
	for {
		label, rest, more := strings.Cut(s, ".")
		if !isDNSLabel(label) {
			return false
		}
		if !more {
			return true
		}
		s = rest
	}
}

// isQualifiedPart reports whether s matches ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9].
func isQualifiedPart(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// Validate checks what the API server would reject in metadata and what this tool
// needs to file an object: apiVersion, kind, a DNS-1123 name (a label for
// Namespaces), a DNS-1123 label namespace, and well-formed label and annotation keys
// and label values.
func (o Object) Validate() error {
	var errs []string
	if o.APIVersion() == "" {
		errs = append(errs, "apiVersion is missing")
	}
	if o.Kind() == "" {
		errs = append(errs, "kind is missing")
	}
	name := o.Name()
	switch {
	case name == "":
		errs = append(errs, "metadata.name is missing")
	case o.Kind() == "Namespace" && !IsDNS1123Label(name):
		errs = append(errs, fmt.Sprintf("metadata.name %q is not a valid namespace name (RFC 1123 label, at most 63 characters)", name))
	case len(name) > 253 || !isSubdomain(name):
		errs = append(errs, fmt.Sprintf("metadata.name %q is not a valid object name (RFC 1123 subdomain)", name))
	}
	md, _ := o["metadata"].(map[string]any) // read only: Validate does not add metadata
	if ns, ok := md["namespace"]; ok {
		if s, _ := ns.(string); !IsDNS1123Label(s) {
			errs = append(errs, fmt.Sprintf("metadata.namespace %v is not a valid namespace name", ns))
		}
	}
	for _, field := range []string{"labels", "annotations"} {
		raw, ok := md[field]
		if !ok {
			continue
		}
		m, ok := raw.(map[string]any)
		if !ok {
			errs = append(errs, fmt.Sprintf("metadata.%s is not a mapping", field))
			continue
		}
		for k, v := range m {
			if !IsQualifiedName(k) {
				errs = append(errs, fmt.Sprintf("metadata.%s key %q is not a valid qualified name", field, k))
			}
			s, isStr := v.(string)
			switch {
			case !isStr:
				errs = append(errs, fmt.Sprintf("metadata.%s[%s] is not a string", field, k))
			case field == "labels" && !IsLabelValue(s):
				errs = append(errs, fmt.Sprintf("metadata.labels[%s] value %q is not a valid label value", k, s))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// MaxLabel is the longest RFC 1123 label, and so the longest namespace name.
const MaxLabel = 63

// IsDNS1123Label reports whether s is a valid RFC 1123 label of at most 63 characters.
func IsDNS1123Label(s string) bool { return len(s) <= MaxLabel && isDNSLabel(s) }

// IsLabelValue reports whether s is a valid label value.
func IsLabelValue(s string) bool { return len(s) <= MaxLabel && (s == "" || isQualifiedPart(s)) }

// IsQualifiedName reports whether s is a valid label or annotation key:
// an optional DNS subdomain prefix and '/', then a name of at most 63 characters.
func IsQualifiedName(s string) bool {
	prefix, name, found := strings.Cut(s, "/")
	if !found {
		name, prefix = prefix, ""
	} else if prefix == "" || len(prefix) > 253 || !isSubdomain(prefix) {
		return false
	}
	return len(name) <= 63 && isQualifiedPart(name)
}
