// Command waldur-gitops-image builds the waldur-gitops container image without
// a Docker daemon: it writes an OCI image layout and a tarball for docker load.
// `make image` cross-builds the binary and runs it; see docs/image.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/waldur/waldur-gitops/containerimage"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

// binaries collects repeated -binary OS/ARCH[/VARIANT]=PATH flags.
type binaries []containerimage.Binary

func (b *binaries) String() string { return fmt.Sprint(len(*b), " binaries") }

func (b *binaries) Set(s string) error {
	plat, path, ok := strings.Cut(s, "=")
	if !ok || path == "" {
		return fmt.Errorf("-binary %q: want OS/ARCH=PATH", s)
	}
	p, err := v1.ParsePlatform(plat)
	if err != nil || p.OS == "" || p.Architecture == "" {
		return fmt.Errorf("-binary %q: platform %q: want OS/ARCH[/VARIANT]", s, plat)
	}
	*b = append(*b, containerimage.Binary{Platform: *p, Path: path})
	return nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("waldur-gitops-image", flag.ContinueOnError)
	var bins binaries
	fs.Var(&bins, "binary", "`OS/ARCH=PATH` of a static waldur-gitops binary (repeat for a multi-platform index)")
	version := fs.String("version", "dev", "version the binaries were linked with (label, default tag)")
	revision := fs.String("revision", "", "VCS revision (label)")
	licenses := fs.String("licenses", "", "SPDX licence expression (label)")
	ref := fs.String("image", "", "image reference to tag (default "+containerimage.DefaultRepository+":VERSION)")
	layoutDir := fs.String("layout", "bin/image", "OCI image layout directory to write (replaced if it holds a layout)")
	tarPath := fs.String("tar", "bin/waldur-gitops-image.tar", "docker-loadable tarball to write (first platform only); empty to skip")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if len(bins) == 0 {
		return errors.New("-binary is required")
	}
	if *ref == "" {
		*ref = containerimage.DefaultRepository + ":" + *version
	}
	tag, err := containerimage.ParseReference(*ref)
	if err != nil {
		return err
	}
	created, err := containerimage.ParseSourceDateEpoch(os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		return err
	}
	res, err := containerimage.Build(ctx, containerimage.Options{
		Binaries: bins, Version: *version, Revision: *revision, Licenses: *licenses, Created: created,
	})
	if err != nil {
		return err
	}
	digest, err := res.Digest()
	if err != nil {
		return fmt.Errorf("image digest: %w", err)
	}
	if err := res.WriteLayout(ctx, *layoutDir, tag); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote OCI image layout %s (%s)\n", *layoutDir, tag.String())
	if *tarPath != "" {
		if err := res.WriteTarball(ctx, *tarPath, tag); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote image tarball %s (%s, %s) for docker load -i\n", *tarPath, tag.String(), res.Platforms[0].String())
	}
	if len(res.Images) > 1 {
		for i, img := range res.Images {
			d, err := img.Digest()
			if err != nil {
				return fmt.Errorf("image digest for %s: %w", res.Platforms[i].String(), err)
			}
			fmt.Fprintf(stdout, "  %s %s\n", res.Platforms[i].String(), d)
		}
	}
	fmt.Fprintf(stdout, "image %s\ndigest %s\n", tag.String(), digest)
	return nil
}
