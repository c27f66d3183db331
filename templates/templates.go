package templates

import (
	"embed"
	"fmt"
	"os"
	"slices"
)

//go:embed k8s-ut-namespace namespace okd rancher
var defaultFS embed.FS

// Defaults returns the embedded templates of a backend type, sorted by file name.
func Defaults(backendType string) ([]*Template, error) {
	if _, err := defaultFS.ReadDir(backendType); err != nil || backendType == "." {
		return nil, fmt.Errorf("no default templates for backend type %q", backendType)
	}
	return LoadFS(defaultFS, backendType, "default:")
}

// ForOffering returns the templates of a backend type plus a site's templates
// directory (empty for none). A site template whose file name equals a default's
// replaces that default; the others are added. The result is sorted by file name.
func ForOffering(backendType, siteDir string) ([]*Template, error) {
	defs, err := Defaults(backendType)
	if err != nil {
		return nil, err
	}
	if siteDir == "" {
		return defs, nil
	}
	site, err := LoadFS(os.DirFS(siteDir), ".", siteDir+"/")
	if err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(defs, func(d *Template) bool {
		return slices.ContainsFunc(site, func(s *Template) bool { return s.File == d.File })
	})
	out = append(out, site...)
	slices.SortFunc(out, func(a, b *Template) int {
		if a.File < b.File {
			return -1
		}
		if a.File > b.File {
			return 1
		}
		return 0
	})
	return out, nil
}
