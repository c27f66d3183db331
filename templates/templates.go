package templates

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"slices"
)

//go:embed k8s-ut-namespace namespace okd rancher
var defaultFS embed.FS

// DefaultFS holds the default templates of the built-in backends, one
// directory per backend type.
var DefaultFS fs.FS = defaultFS

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
	return ForOfferingFS(defaultFS, backendType, siteDir)
}

// ForOfferingFS is ForOffering with the default templates read from the
// directory named backendType in defaults (a backend's registration); nil
// defaults reads the built-in ones.
func ForOfferingFS(defaults fs.FS, backendType, siteDir string) ([]*Template, error) {
	if defaults == nil {
		defaults = defaultFS
	}
	if _, err := fs.ReadDir(defaults, backendType); err != nil || backendType == "." {
		return nil, fmt.Errorf("no default templates for backend type %q", backendType)
	}
	defs, err := LoadFS(defaults, backendType, "default:")
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
