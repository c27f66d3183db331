// Package keycloaktest runs a real, throwaway Keycloak for tests: the server
// distribution org.keycloak:keycloak-quarkus-dist at Version, downloaded from
// Maven Central once (its SHA-256 checked), unpacked and built (kc.sh build)
// once into a cache, and started on 127.0.0.1 with an in-memory database, a
// local cache and a bootstrap admin whose password is random and never
// logged. It runs on the newest JDK 21 or later it finds on the machine.
//
// Cold (download, unpack, build, first start) takes about a minute on an idle
// two-core machine and up to three on a loaded one; a later start, with the
// build cached, 25–60 s. A test package starts one server in TestMain (see
// Main) and its tests share it, each in realms of its own.
//
// The cache directory is $WALDUR_GITOPS_KEYCLOAK_CACHE, else
// <user cache dir>/waldur-gitops/keycloak. A file lock serialises the download
// and the build, so test binaries of several packages may ask at once; each
// server has a directory of its own (its data, its log), so they may also run
// at once.
//
// Settings of this package are never named KC_*: Keycloak reads every
// KC_<OPTION> environment variable as a server option, and the environment
// handed to it is stripped of them.
package keycloaktest

import (
	"archive/zip"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/filelock"
	"github.com/waldur/waldur-gitops/internal/testenv/testproc"
)

// Version is the Keycloak release the tests run against.
const Version = "26.7.3"

// The distribution: where it comes from and what its bytes must hash to.
// SHA256 was computed once from the file Maven Central serves (its .sha1,
// 1e21a7f572581692aacb379dbba8413f99b67208, matched the same download).
const (
	DistURL    = "https://repo1.maven.org/maven2/org/keycloak/keycloak-quarkus-dist/" + Version + "/keycloak-quarkus-dist-" + Version + ".zip"
	DistSHA256 = "27a6535553c3cdcd083872ba40629efafb3475e3b758e0c6f691395561dd0f1f"
	distSize   = 176710367
)

// CacheEnv names the environment variable that overrides the cache directory.
const CacheEnv = "WALDUR_GITOPS_KEYCLOAK_CACHE"

// MinJava is the oldest Java feature release used: the one Keycloak 26 documents.
const MinJava = 21

// buildOptions are the build-time options kc.sh build bakes into the
// distribution: an in-memory H2 database (every server starts empty), a
// cache that does not look for cluster peers, and the health endpoints the
// readiness check polls.
var buildOptions = []string{"--db=dev-mem", "--cache=local", "--health-enabled=true"}

// CacheDir returns the directory the distribution is kept in.
func CacheDir() (string, error) { return testproc.CacheDir(CacheEnv, "keycloak") }

// distSpec says where a distribution comes from; tests hand in a small one.
type distSpec struct {
	version, url, sha256 string
	size                 int64
}

var release = distSpec{version: Version, url: DistURL, sha256: DistSHA256, size: distSize}

// Dist is an unpacked and built distribution.
type Dist struct {
	// Home is the unpacked distribution (bin/kc.sh, lib/, conf/ …).
	Home string
	// Java is the JDK it runs on.
	Java JDK
}

// EnsureDist returns the cached distribution, downloading, unpacking and
// building what is missing. Progress goes to log (nil: discarded).
func EnsureDist(ctx context.Context, log io.Writer) (*Dist, error) {
	if log == nil {
		log = io.Discard
	}
	java, err := FindJava()
	if err != nil {
		return nil, err
	}
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	home, err := ensureUnpacked(ctx, dir, release, log)
	if err != nil {
		return nil, err
	}
	if err := ensureBuilt(ctx, dir, home, java, log); err != nil {
		return nil, err
	}
	return &Dist{Home: home, Java: java}, nil
}

// ensureUnpacked returns <dir>/keycloak-<version>, downloading and unpacking
// the zip under the cache lock when it is missing.
func ensureUnpacked(ctx context.Context, dir string, d distSpec, log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	home := filepath.Join(dir, "keycloak-"+d.version)
	kcsh := filepath.Join(home, "bin", "kc.sh")
	if testproc.Executable(kcsh) {
		return home, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := filelock.Lock(filepath.Join(dir, ".lock"))
	if err != nil {
		return "", fmt.Errorf("lock the keycloak cache %s: %w", dir, err)
	}
	defer unlock()
	if testproc.Executable(kcsh) { // another process unpacked it while this one waited
		return home, nil
	}
	zipPath := filepath.Join(dir, "keycloak-quarkus-dist-"+d.version+".zip")
	if err := download(ctx, d, zipPath, log); err != nil {
		return "", err
	}
	if err := unpack(zipPath, dir, "keycloak-"+d.version, log); err != nil {
		return "", err
	}
	if !testproc.Executable(kcsh) {
		return "", fmt.Errorf("keycloak %s: the unpacked distribution has no executable bin/kc.sh", d.version)
	}
	// The zip is not needed any more; the unpacked tree is what is cached.
	_ = os.Remove(zipPath)
	return home, nil
}

// download fetches d into path unless a file with the right checksum is
// there, writing through a temporary file and checking the SHA-256 before
// the file gets its name.
func download(ctx context.Context, d distSpec, path string, log io.Writer) error {
	if sum, err := fileSHA256(path); err == nil && sum == d.sha256 {
		return nil
	}
	fmt.Fprintf(log, "keycloaktest: downloading Keycloak %s (%d MB, once) from %s\n", d.version, (d.size+999_999)/1_000_000, d.url)
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.url, nil)
	if err != nil {
		return fmt.Errorf("download keycloak %s: %w", d.version, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("download keycloak %s from %s: %w", d.version, d.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("download keycloak %s from %s: %s", d.version, d.url, resp.Status)
	}
	tmp := path + ".part"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("download keycloak %s from %s: %w", d.version, d.url, err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != d.sha256 {
		_ = os.Remove(tmp)
		return fmt.Errorf("download keycloak %s from %s: SHA-256 %s, want %s (%d bytes); refusing to use it", d.version, d.url, sum, d.sha256, n)
	}
	fmt.Fprintf(log, "keycloaktest: downloaded %d bytes in %s, SHA-256 checked\n", n, time.Since(start).Round(100*time.Millisecond))
	return os.Rename(tmp, path)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// unpack extracts the zip into a scratch directory under dir and moves its
// top directory top into place, so that an interrupted unpack never leaves a
// half tree under the final name. Entries that would land outside the scratch
// directory are refused.
func unpack(zipPath, dir, top string, log io.Writer) error {
	fmt.Fprintf(log, "keycloaktest: unpacking %s\n", filepath.Base(zipPath))
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return fmt.Errorf("open %s: %w", zipPath, err)
	}
	defer zr.Close()
	scratch, err := os.MkdirTemp(dir, ".unpack-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	for _, f := range zr.File {
		name := filepath.FromSlash(f.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("unpack %s: entry %q points outside the distribution", zipPath, f.Name)
		}
		dst := filepath.Join(scratch, name)
		mode := f.Mode()
		switch {
		case mode.IsDir():
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
			continue
		case !mode.IsRegular():
			return fmt.Errorf("unpack %s: entry %q is not a regular file", zipPath, f.Name)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := extract(f, dst, mode.Perm()|0o600); err != nil {
			return fmt.Errorf("unpack %s: %s: %w", zipPath, f.Name, err)
		}
	}
	final := filepath.Join(dir, top)
	_ = os.RemoveAll(final)
	if err := os.Rename(filepath.Join(scratch, top), final); err != nil {
		return fmt.Errorf("unpack %s: no top directory %s: %w", zipPath, top, err)
	}
	return nil
}

func extract(f *zip.File, dst string, perm os.FileMode) error {
	r, err := f.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// ensureBuilt runs kc.sh build with buildOptions unless the stamp says the
// distribution was built with them already.
func ensureBuilt(ctx context.Context, dir, home string, java JDK, log io.Writer) error {
	stamp := filepath.Join(home, ".waldur-gitops-build")
	want := strings.Join(buildOptions, " ") + "\n"
	if b, err := os.ReadFile(stamp); err == nil && string(b) == want {
		return nil
	}
	unlock, err := filelock.Lock(filepath.Join(dir, ".lock"))
	if err != nil {
		return fmt.Errorf("lock the keycloak cache %s: %w", dir, err)
	}
	defer unlock()
	if b, err := os.ReadFile(stamp); err == nil && string(b) == want {
		return nil
	}
	fmt.Fprintf(log, "keycloaktest: building Keycloak %s (kc.sh build %s; once, about a minute)\n", Version, strings.Join(buildOptions, " "))
	start := time.Now()
	argv := append([]string{filepath.Join(home, "bin", "kc.sh"), "build"}, buildOptions...)
	if nice, err := exec.LookPath("nice"); err == nil {
		argv = append([]string{nice, "-n", "10"}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = java.env()
	var tail testproc.TailBuffer
	cmd.Stdout, cmd.Stderr = &tail, &tail
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kc.sh build in %s (java %s): %w\n%s", home, java.Home, err, tail.String())
	}
	fmt.Fprintf(log, "keycloaktest: built in %s\n", time.Since(start).Round(time.Second))
	return os.WriteFile(stamp, []byte(want), 0o644)
}

// JDK is a Java installation.
type JDK struct {
	// Home is the directory with bin/java.
	Home string
	// Major is the feature release, e.g. 21.
	Major int
}

// env is the environment Keycloak's scripts and JVM get: ours without any
// KC_* variable (each would be read as a server option) and without JAVA_*
// settings of the caller, with JAVA_HOME set to the JDK.
func (j JDK) env() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "KC_") || strings.HasPrefix(k, "JAVA_") || k == "JAVA" || k == "JDK_JAVA_OPTIONS" {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "JAVA_HOME="+j.Home)
}

// javaSearch lists the places FindJava looks in, as glob patterns of JDK homes.
func javaSearch() []string {
	pats := []string{
		"/usr/lib/jvm/*", "/usr/java/*", "/usr/local/java/*", "/usr/local/*jdk*",
		"/opt/*", "/opt/java/*", "/opt/hostedtoolcache/Java_*/*/x64",
		"/Library/Java/JavaVirtualMachines/*/Contents/Home",
	}
	if h, err := os.UserHomeDir(); err == nil {
		pats = append(pats, filepath.Join(h, ".sdkman/candidates/java/*"), filepath.Join(h, ".jdks/*"))
	}
	return pats
}

// FindJava returns the JDK to run Keycloak on: $JAVA_HOME when it is Java
// MinJava or later, else the newest such JDK among the usual install places
// (see javaSearch) and the java on PATH. The error names every place looked
// at and what was found there.
func FindJava() (JDK, error) {
	return findJava(os.Getenv("JAVA_HOME"), javaSearch())
}

func findJava(javaHome string, patterns []string) (JDK, error) {
	var seen []string // what was looked at, for the error
	if javaHome != "" {
		j, err := probeJDK(javaHome)
		switch {
		case err != nil:
			seen = append(seen, fmt.Sprintf("$JAVA_HOME=%s (%v)", javaHome, err))
		case j.Major < MinJava:
			seen = append(seen, fmt.Sprintf("$JAVA_HOME=%s (Java %d)", javaHome, j.Major))
		default:
			return j, nil
		}
	} else {
		seen = append(seen, "$JAVA_HOME (unset)")
	}
	var homes []string
	for _, p := range patterns {
		m, _ := filepath.Glob(p)
		homes = append(homes, m...)
	}
	if java, err := exec.LookPath("java"); err == nil {
		if real, err := filepath.EvalSymlinks(java); err == nil {
			homes = append(homes, filepath.Dir(filepath.Dir(real)))
		}
	}
	var best JDK
	done := map[string]bool{}
	for _, h := range homes {
		real, err := filepath.EvalSymlinks(h)
		if err != nil || done[real] || !testproc.Executable(filepath.Join(real, "bin", "java")) {
			continue
		}
		done[real] = true
		j, err := probeJDK(h)
		if err != nil {
			seen = append(seen, fmt.Sprintf("%s (%v)", h, err))
			continue
		}
		seen = append(seen, fmt.Sprintf("%s (Java %d)", h, j.Major))
		if j.Major >= MinJava && j.Major > best.Major {
			best = j
		}
	}
	if best.Home != "" {
		return best, nil
	}
	return JDK{}, fmt.Errorf("no JDK %d or newer to run Keycloak %s on: looked at %s, in %s and the java on PATH; "+
		"install one (for example Temurin 21 or later) or set JAVA_HOME to it; go test -short skips the tests that need Keycloak",
		MinJava, Version, strings.Join(seen, ", "), strings.Join(patterns, ", "))
}

// probeJDK reads a JDK's feature release from its release file, or else from
// java -version.
func probeJDK(home string) (JDK, error) {
	if !testproc.Executable(filepath.Join(home, "bin", "java")) {
		return JDK{}, errors.New("no bin/java")
	}
	if v, err := releaseVersion(filepath.Join(home, "release")); err == nil {
		return JDK{Home: home, Major: v}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(home, "bin", "java"), "-version").CombinedOutput()
	if err != nil {
		return JDK{}, fmt.Errorf("java -version: %w", err)
	}
	_, rest, ok := strings.Cut(string(out), `version "`)
	if !ok {
		return JDK{}, fmt.Errorf("java -version printed no version")
	}
	v, _, _ := strings.Cut(rest, `"`)
	m, err := majorOf(v)
	if err != nil {
		return JDK{}, err
	}
	return JDK{Home: home, Major: m}, nil
}

// releaseVersion reads JAVA_VERSION="…" from a JDK's release file.
func releaseVersion(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "JAVA_VERSION="); ok {
			return majorOf(strings.Trim(v, `"`))
		}
	}
	return 0, fmt.Errorf("%s has no JAVA_VERSION", path)
}

// majorOf returns the feature release of a Java version: 25 for "25.0.3",
// 8 for "1.8.0_292".
func majorOf(v string) (int, error) {
	parts := strings.FieldsFunc(v, func(r rune) bool { return r == '.' || r == '_' || r == '+' || r == '-' })
	if len(parts) > 1 && parts[0] == "1" {
		parts = parts[1:]
	}
	if len(parts) == 0 {
		return 0, fmt.Errorf("unreadable version %q of Java", v)
	}
	n, err := strconv.Atoi(parts[0])
	if err != nil {
		return 0, fmt.Errorf("unreadable version %q of Java", v)
	}
	return n, nil
}
