// Package version holds the build's version, set at link time with
// -ldflags "-X github.com/waldur/waldur-gitops/internal/version.Version=v1.2.3".
package version

import "runtime/debug"

// Version is the release version; "dev" for untagged builds.
var Version = "dev"

// String returns the version, with the VCS revision when the build recorded one.
func String() string {
	v := Version
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " (" + s.Value[:12] + ")"
			}
		}
	}
	return v
}

// UserAgent is the User-Agent this tool sends.
func UserAgent() string { return "waldur-gitops/" + Version }
