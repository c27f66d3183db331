package gitsync

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"golang.org/x/crypto/ssh"

	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
)

// sshKey returns an unencrypted OpenSSH private key of the given kind.
func sshKey(t *testing.T, kind string) []byte {
	t.Helper()
	var key any
	var err error
	switch kind {
	case "ed25519":
		_, key, err = ed25519.GenerateKey(rand.Reader)
	case "ecdsa":
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "rsa":
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	}
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(key, "")
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block)
}

// signedSync makes one signed commit in a new bare repository and returns the
// repository and the commit.
func signedSync(t *testing.T, s Signer) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "r.git")
	gittest.InitBare(t, dir, "main")
	r := open(t, dir, "waldur", nil, func(o *Options) { o.Signer = s })
	res, err := Sync(t.Context(), r, planOf(tenantTree("v1", "o/cluster/a"), "signed\n"), 0)
	if err != nil {
		t.Fatal(err)
	}
	return dir, res.Commit
}

// SSH-signed commits verify with git's own verification (ssh-keygen -Y verify
// against an allowed-signers file), as Argo CD and Flux would check them, and
// fail against another key.
func TestSSHSignatureVerifiesWithGit(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("no ssh-keygen")
	}
	for _, kind := range []string{"ed25519", "ecdsa", "rsa"} {
		t.Run(kind, func(t *testing.T) {
			s, err := NewSSHSigner(sshKey(t, kind))
			if err != nil {
				t.Fatal(err)
			}
			dir, commit := signedSync(t, s)
			other, _ := NewSSHSigner(sshKey(t, "ed25519"))
			for _, tc := range []struct {
				name  string
				key   string
				valid bool
			}{{"own key", s.(*sshSigner).PublicKey(), true}, {"another key", other.(*sshSigner).PublicKey(), false}} {
				allowed := filepath.Join(t.TempDir(), "allowed_signers")
				if err := os.WriteFile(allowed, []byte("bot@example.org "+tc.key+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				out, err := gittest.GitErr(dir, nil, "-c", "gpg.format=ssh", "-c", "gpg.ssh.allowedSignersFile="+allowed, "verify-commit", "--raw", commit)
				if (err == nil) != tc.valid {
					t.Errorf("%s: verify-commit: err %v, want valid=%v\n%s", tc.name, err, tc.valid, out)
				}
			}
		})
	}
}

// OpenPGP-signed commits verify with gpg through git verify-commit, and with
// go-git.
func TestOpenPGPSignatureVerifies(t *testing.T) {
	e, err := openpgp.NewEntity("waldur-gitops", "test", "bot@example.org", nil)
	if err != nil {
		t.Fatal(err)
	}
	var priv, pub bytes.Buffer
	w, _ := armor.Encode(&priv, openpgp.PrivateKeyType, nil)
	if err := e.SerializePrivate(w, nil); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	w, _ = armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	s, err := NewOpenPGPSigner(priv.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	dir, commit := signedSync(t, s)

	r := open(t, dir, "waldur", nil)
	if err := r.Fetch(t.Context()); err != nil {
		t.Fatal(err)
	}
	c, err := object.GetCommit(r.store, plumbing.NewHash(commit))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Verify(pub.String()); err != nil {
		t.Errorf("go-git: %v", err)
	}

	if _, err := exec.LookPath("gpg"); err != nil {
		t.Skip("no gpg")
	}
	home, err := os.MkdirTemp("", "gpg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run()
		_ = os.RemoveAll(home)
	})
	env := append(gittest.Env(), "GNUPGHOME="+home)
	imp := exec.Command("gpg", "--batch", "--import")
	imp.Env, imp.Stdin = env, bytes.NewReader(pub.Bytes())
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("gpg --import: %v\n%s", err, out)
	}
	verify := exec.Command("git", "verify-commit", "--raw", commit)
	verify.Dir, verify.Env = dir, env
	out, err := verify.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "GOODSIG") {
		t.Errorf("git verify-commit: %v\n%s", err, out)
	}
}

func TestSignerRefusesBadKeys(t *testing.T) {
	encrypted, err := ssh.MarshalPrivateKeyWithPassphrase(ed25519.NewKeyFromSeed(make([]byte, 32)), "", []byte("pass"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, typ string
		key       []byte
		want      string
	}{
		{"ssh key with a passphrase", "ssh", pem.EncodeToMemory(encrypted), "passphrase"},
		{"not an ssh key", "ssh", []byte("hello"), "not an ssh private key"},
		{"not an OpenPGP key", "openpgp", []byte("hello"), "not an OpenPGP key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "key")
			if err := os.WriteFile(f, tc.key, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadSigner(f, tc.typ)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}
