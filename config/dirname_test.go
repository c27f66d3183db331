package config

import (
	"regexp"
	"strings"
	"testing"
)

// TestDirName checks DirName against the expression it replaced: the name
// lower-cased, every run of characters other than [a-z0-9] one dash, no
// dash at either end.
func TestDirName(t *testing.T) {
	nonSlug := regexp.MustCompile(`[^a-z0-9]+`)
	for _, name := range []string{
		"", "HPC", "My Offering", "  a  b  ", "--x--", "Überrechner 2", "計算 cluster", "a\xffb", "K8s_UT.ns", "ÅÄÖ", "İstanbul",
	} {
		t.Run(name, func(t *testing.T) {
			want := strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(name), "-"), "-")
			if got := (&Offering{Name: name}).DirName(); got != want {
				t.Errorf("DirName(%q) = %q, want %q", name, got, want)
			}
		})
	}
}
