package keycloaktest

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/internal/testenv/testproc"
)

// fakeJDK makes a directory that looks like a JDK of the given version.
func fakeJDK(t *testing.T, dir, version string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "java"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), []byte("IMPLEMENTOR=\"test\"\nJAVA_VERSION=\""+version+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestFindJava(t *testing.T) {
	root := t.TempDir()
	jvm := filepath.Join(root, "jvm")
	j17 := fakeJDK(t, filepath.Join(jvm, "java-17"), "17.0.15")
	j21 := fakeJDK(t, filepath.Join(jvm, "temurin-21"), "21.0.4")
	j25 := fakeJDK(t, filepath.Join(jvm, "temurin-25"), "25.0.3")
	j8 := fakeJDK(t, filepath.Join(root, "old"), "1.8.0_292")
	if err := os.MkdirAll(filepath.Join(jvm, "not-a-jdk"), 0o755); err != nil {
		t.Fatal(err)
	}
	pat := []string{filepath.Join(jvm, "*")}
	t.Setenv("PATH", "") // no java on PATH for these cases
	for _, tc := range []struct {
		name, javaHome string
		patterns       []string
		want           string
		wantErr        []string
	}{
		{name: "newest of the installed", patterns: pat, want: j25},
		{name: "JAVA_HOME when new enough", javaHome: j21, patterns: pat, want: j21},
		{name: "JAVA_HOME too old: newest instead", javaHome: j17, patterns: pat, want: j25},
		{name: "nothing fits", javaHome: j8, patterns: []string{filepath.Join(jvm, "java-*")},
			wantErr: []string{"no JDK 21 or newer", "$JAVA_HOME=" + j8 + " (Java 8)", j17 + " (Java 17)", "set JAVA_HOME"}},
		{name: "nothing at all", patterns: []string{filepath.Join(root, "none", "*")},
			wantErr: []string{"$JAVA_HOME (unset)", filepath.Join(root, "none", "*")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := findJava(tc.javaHome, tc.patterns)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("found %v, want an error", j)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not name %q", err, w)
					}
				}
				return
			}
			if err != nil || j.Home != tc.want {
				t.Fatalf("got %v %v, want %s", j, err, tc.want)
			}
		})
	}
}

func TestMajorOf(t *testing.T) {
	for v, want := range map[string]int{"25.0.3": 25, "21": 21, "1.8.0_292": 8, "17.0.15+6-LTS": 17, "26-ea": 26} {
		if got, err := majorOf(v); err != nil || got != want {
			t.Errorf("majorOf(%q) = %d %v, want %d", v, got, err, want)
		}
	}
	if _, err := majorOf("abc"); err == nil {
		t.Error("majorOf(abc) gave no error")
	}
}

// zipOf builds a zip with the given files (name → content; a name ending in
// .sh is executable).
func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, content := range files {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate}
		h.SetMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			h.SetMode(0o755)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(content))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func serve(t *testing.T, body []byte) (string, *int) {
	t.Helper()
	hits := new(int)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*hits++
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/dist.zip", hits
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// The distribution is downloaded once, checked, unpacked under its version's
// name with kc.sh executable, and the zip dropped; a second call downloads nothing.
func TestEnsureUnpacked(t *testing.T) {
	body := zipOf(t, map[string]string{"keycloak-9.9.9/bin/kc.sh": "#!/bin/sh\n", "keycloak-9.9.9/conf/keycloak.conf": "x=y\n"})
	url, hits := serve(t, body)
	dir := t.TempDir()
	d := distSpec{version: "9.9.9", url: url, sha256: sum(body), size: int64(len(body))}
	var log bytes.Buffer
	home, err := ensureUnpacked(context.Background(), dir, d, &log)
	if err != nil {
		t.Fatal(err)
	}
	if home != filepath.Join(dir, "keycloak-9.9.9") || !testproc.Executable(filepath.Join(home, "bin", "kc.sh")) {
		t.Fatalf("home %s without an executable kc.sh", home)
	}
	if !strings.Contains(log.String(), "downloading Keycloak 9.9.9") {
		t.Errorf("the download was not announced: %q", log.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "keycloak-quarkus-dist-9.9.9.zip")); !os.IsNotExist(err) {
		t.Errorf("the zip was kept: %v", err)
	}
	if _, err := ensureUnpacked(context.Background(), dir, d, &log); err != nil || *hits != 1 {
		t.Errorf("second call: %v, %d downloads, want 1", err, *hits)
	}
}

// A download whose checksum does not match is refused and leaves nothing behind.
func TestDownloadChecksum(t *testing.T) {
	body := zipOf(t, map[string]string{"keycloak-9.9.9/bin/kc.sh": "#!/bin/sh\n"})
	url, _ := serve(t, body)
	dir := t.TempDir()
	d := distSpec{version: "9.9.9", url: url, sha256: strings.Repeat("0", 64)}
	_, err := ensureUnpacked(context.Background(), dir, d, nil)
	if err == nil || !strings.Contains(err.Error(), "SHA-256 "+sum(body)) || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("error %v, want a checksum refusal naming the sums", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range left {
		if filepath.Base(f) != ".lock" {
			t.Errorf("left behind: %s", f)
		}
	}
}

// A zip entry that climbs out of the target directory is refused.
func TestUnpackRefusesEscape(t *testing.T) {
	body := zipOf(t, map[string]string{"keycloak-9.9.9/bin/kc.sh": "#!/bin/sh\n", "../escaped": "x"})
	url, _ := serve(t, body)
	dir := t.TempDir()
	d := distSpec{version: "9.9.9", url: url, sha256: sum(body)}
	_, err := ensureUnpacked(context.Background(), filepath.Join(dir, "cache"), d, nil)
	if err == nil || !strings.Contains(err.Error(), "outside the distribution") {
		t.Fatalf("error %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "escaped")); !os.IsNotExist(err) {
		t.Errorf("the entry was written: %v", err)
	}
}

// The environment handed to Keycloak has no KC_* variable (each would be a
// server option) and the chosen JAVA_HOME.
func TestEnv(t *testing.T) {
	t.Setenv("KC_CACHE", "/somewhere")
	t.Setenv("JAVA_OPTS", "-Xmx1m")
	env := JDK{Home: "/jdk"}.env()
	for _, kv := range env {
		if strings.HasPrefix(kv, "KC_") || strings.HasPrefix(kv, "JAVA_OPTS") {
			t.Errorf("passed on: %s", kv)
		}
	}
	if env[len(env)-1] != "JAVA_HOME=/jdk" {
		t.Errorf("JAVA_HOME not set: %v", env[len(env)-1])
	}
}
