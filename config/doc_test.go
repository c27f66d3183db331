package config_test

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/waldur/waldur-gitops/config"
)

// docRow is one row of a key table in docs/config.md.
type docRow struct{ key, def string }

var backticked = regexp.MustCompile("`([^`]*)`")

// readDoc returns the key tables of docs/config.md by section heading, and the
// keys listed in the table of ignored site-agent keys.
func readDoc(t *testing.T) (map[string][]docRow, map[string]bool) {
	t.Helper()
	b, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	tables, ignored := map[string][]docRow{}, map[string]bool{}
	section := ""
	for line := range strings.SplitSeq(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
			section = strings.TrimSpace(strings.TrimLeft(line, "#"))
		case section == "Site-agent keys that are ignored" && strings.HasPrefix(line, "| "):
			cells := strings.Split(line, " | ")
			for _, m := range backticked.FindAllStringSubmatch(cells[len(cells)-1], -1) {
				ignored[m[1]] = true
			}
		case strings.HasPrefix(line, "| `"):
			cells := strings.Split(line, " | ")
			if len(cells) < 4 {
				t.Fatalf("short table row: %s", line)
			}
			tables[section] = append(tables[section], docRow{strings.Trim(cells[0], "| `"), cells[2]})
		}
	}
	return tables, ignored
}

// yamlKeys returns the keys of struct type t that are read and those that are
// ignored; keys of inlined structs are left out.
func yamlKeys(t reflect.Type) (used map[string]reflect.StructField, ignored []string) {
	used = map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case opts == "inline", name == "", name == "-":
		case f.Type == reflect.TypeOf(config.Ignored{}):
			ignored = append(ignored, name)
		default:
			used[name] = f
		}
	}
	return used, ignored
}

// docValue renders v the way the documentation writes defaults.
func docValue(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "true" // an unset *bool means true
		}
		v = v.Elem()
	}
	return fmt.Sprint(v.Interface())
}

// docDefault parses a documented default for a value of type t: ok is false for
// the defaults described in words.
func docDefault(t *testing.T, def string, typ reflect.Type) (want string, zero, ok bool) {
	t.Helper()
	switch {
	case strings.HasPrefix(def, "— (required)"):
		return "", false, false
	case strings.HasPrefix(def, "—"):
		return "", true, true
	case !strings.HasPrefix(def, "`"):
		return "", false, false
	}
	tokens := backticked.FindAllStringSubmatch(def, -1)
	if typ.Kind() != reflect.Map {
		if len(tokens) != 1 {
			t.Fatalf("default %s: want one value", def)
		}
		return tokens[0][1], false, true
	}
	m := map[string]string{}
	if len(tokens) == 1 && strings.HasPrefix(tokens[0][1], "{") {
		if err := yaml.Unmarshal([]byte(tokens[0][1]), &m); err != nil {
			t.Fatalf("default %s: %v", def, err)
		}
	} else {
		for _, tok := range tokens {
			k, v, found := strings.Cut(tok[1], ": ")
			if !found {
				t.Fatalf("default %s: %q is not key: value", def, tok[1])
			}
			m[k] = v
		}
	}
	return fmt.Sprint(m), false, true
}

// docs/config.md documents every key the code reads, with the defaults the code
// applies, and lists every site-agent key the code ignores.
func TestDocMatchesCode(t *testing.T) {
	tables, ignoredInDoc := readDoc(t)
	l := mustParse(t, `
offerings:
  - {name: a, waldur_api_url: "https://w.example.org", waldur_offering_uuid: `+validUUID+`, backend_type: k8s-ut-namespace,
     backend_components: {cpu: {}}}
  - {name: b, waldur_api_url: "https://w.example.org", waldur_offering_uuid: `+validUUID+`, backend_type: namespace}
  - {name: c, waldur_api_url: "https://w.example.org", waldur_offering_uuid: `+validUUID+`, backend_type: okd}
  - {name: d, waldur_api_url: "https://w.example.org", waldur_offering_uuid: `+validUUID+`, backend_type: rancher,
     backend_settings: {cluster_id: c-1}}
`)
	o := l.Offerings
	sections := []struct {
		heading string
		value   any // loaded with every default
	}{
		{"Top level", *l.Config},
		{"git", l.Git},
		{"metrics", l.Metrics},
		{"serve", l.Serve},
		{"usage", l.Usage},
		{"serve", l.Serve},
		{"serve.leader_election", l.Serve.LeaderElection},
		{"offerings", o[1]},
		{"backend_components", o[0].BackendComponents["cpu"]},
		{"Keys of every backend type", *o[0].Settings.Common()},
		{"Keys of every backend type", *o[3].Settings.Common()},
		{"keycloak", o[1].Settings.Common().Keycloak},
		{"keycloak_groups", o[3].Settings.Common().KeycloakGroups},
		{"k8s-ut-namespace", *o[0].Settings.K8sUT},
		{"namespace", *o[1].Settings.Namespace},
		{"okd", *o[2].Settings.OKD},
		{"rancher", *o[3].Settings.Rancher},
	}
	var allIgnored []string
	for _, sec := range sections {
		t.Run(sec.heading, func(t *testing.T) {
			v := reflect.ValueOf(sec.value)
			used, ignored := yamlKeys(v.Type())
			allIgnored = append(allIgnored, ignored...)
			rows := tables[sec.heading]
			var documented []string
			for _, r := range rows {
				documented = append(documented, r.key)
				f, ok := used[r.key]
				if !ok {
					t.Errorf("the doc lists %s, which the code does not read here", r.key)
					continue
				}
				want, zero, ok := docDefault(t, r.def, f.Type)
				got := v.FieldByIndex(f.Index)
				switch {
				case !ok:
				case zero && !got.IsZero():
					t.Errorf("%s: the doc gives no default, the code sets %v", r.key, docValue(got))
				case !zero && docValue(got) != want:
					t.Errorf("%s: the doc says the default is %s, the code gives %s", r.key, want, docValue(got))
				}
			}
			for k := range used {
				if !slices.Contains(documented, k) {
					t.Errorf("%s is not documented", k)
				}
			}
		})
	}
	for _, k := range allIgnored {
		if !ignoredInDoc[k] {
			t.Errorf("ignored key %s is not in the doc's table of ignored keys", k)
		}
	}
}
