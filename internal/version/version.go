// Package version holds the build's version and commit, set at link time with
// -ldflags "-X github.com/waldur/waldur-gitops/internal/version.Version=v1.2.3
// -X github.com/waldur/waldur-gitops/internal/version.Commit=<sha>" (make build
// sets both).
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is the release version; "dev" for untagged builds.
var Version = "dev"

// Commit is the VCS revision the build was made from; when the link did not
// set it, the revision the Go toolchain recorded (vcs.revision) is used.
var Commit = ""

// Info is what the version command prints.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// Get returns the build's version, commit ("unknown" when neither the link
// nor the toolchain recorded one), Go version and platform (GOOS/GOARCH).
func Get() Info {
	return Info{Version: Version, Commit: commit(), GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
}

// commit is Commit, else the build's vcs.revision (with "-dirty" for a
// modified tree), else "unknown".
func commit() string {
	if Commit != "" {
		return Commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", ""
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev == "" {
		return "unknown"
	}
	return rev + dirty
}

// String returns the version, with the first 12 characters of the commit
// when one is known.
func String() string {
	if c := commit(); c != "unknown" && len(c) >= 12 {
		return Version + " (" + c[:12] + ")"
	}
	return Version
}

// UserAgent is the User-Agent this tool sends.
func UserAgent() string { return "waldur-gitops/" + Version }
