package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
)

// TestKeycloakMemoryInGitRef: with the defaults, sync keeps the Keycloak
// memory in a state ref of the GitOps repository, so that the next process
// (a CronJob with no volume) does not list the realm again; dry runs leave
// the ref as it is; a corrupt ref means a full pass, a warning and a valid
// ref again; keycloak_state: off keeps no memory and writes no ref.
func TestKeycloakMemoryInGitRef(t *testing.T) {
	_, waldurCfg := serveExample(t)
	kc := kctest.NewServer()
	defer kc.Close()
	gsrv, repo, url := gitRepo(t)
	cfg := withGit(t, keycloakConfigFrom(t, waldurCfg, kc.URL, "", true), gsrv, url)
	addExampleUsers(t, kc, cfg)
	ref := gitsync.StateRef("keycloak")
	tip := func() string {
		out, err := gittest.GitErr(repo, nil, "rev-parse", "--verify", "--quiet", ref)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(out)
	}
	sync := func(args ...string) (listed int, stderr string) {
		t.Helper()
		kc.ResetCounts()
		code, stdout, stderr := run(t, append([]string{"sync", "--config", cfg}, args...)...)
		if code != ExitOK && code != ExitDiff {
			t.Fatalf("sync %v: exit %d\n%s\n%s", args, code, stdout, stderr)
		}
		return kc.Calls()["GET /groups"], stderr
	}

	if listed, _ := sync(); listed == 0 || tip() == "" {
		t.Fatalf("first sync: %d listings, state ref %q", listed, tip())
	}
	if listed, _ := sync(); listed != 0 {
		t.Errorf("a fresh process with the state ref listed the realm %d times", listed)
	}

	t.Run("dry runs do not write the ref", func(t *testing.T) {
		before := tip()
		kc.ExpireTokens()
		for _, args := range [][]string{{"sync", "--dry-run"}, {"render", "--dry-run"}} {
			code, stdout, stderr := run(t, append(args, "--config", cfg)...)
			if code != ExitOK && code != ExitDiff {
				t.Fatalf("%v: exit %d\n%s\n%s", args, code, stdout, stderr)
			}
			if got := tip(); got != before {
				t.Errorf("%v moved the state ref from %s to %s", args, before, got)
			}
		}
	})

	t.Run("a corrupt ref means a full pass and a warning", func(t *testing.T) {
		blob := strings.TrimSpace(gitIn(t, repo, "not gzip, not json", "hash-object", "-w", "--stdin"))
		tree := strings.TrimSpace(gitIn(t, repo, "100644 blob "+blob+"\tkeycloak\n", "mktree"))
		commit := strings.TrimSpace(gittest.Git(t, repo, "commit-tree", tree, "-m", "forged"))
		gittest.Git(t, repo, "update-ref", ref, commit)
		listed, stderr := sync()
		if listed == 0 || !strings.Contains(stderr, "is not valid") {
			t.Errorf("a corrupt state ref: %d listings, stderr:\n%s", listed, stderr)
		}
		if got := tip(); got == commit || got == "" {
			t.Errorf("the corrupt state ref was not replaced (%s)", got)
		}
		if listed, _ := sync(); listed != 0 {
			t.Errorf("after the corrupt ref was replaced the realm was listed %d times", listed)
		}
	})

	t.Run("the keycloak verb shares the ref", func(t *testing.T) {
		// A CronJob that runs the keycloak verb alone starts from what
		// sync left, and leaves what the next process starts from.
		for i := range 2 {
			kc.ResetCounts()
			code, stdout, stderr := run(t, "keycloak", "--config", cfg)
			if code != ExitOK && code != ExitDiff {
				t.Fatalf("keycloak: exit %d\n%s\n%s", code, stdout, stderr)
			}
			if listed := kc.Calls()["GET /groups"]; listed != 0 {
				t.Errorf("keycloak run %d listed the realm %d times", i+1, listed)
			}
		}
		before := tip()
		gittest.Git(t, repo, "update-ref", "-d", ref)
		kc.ResetCounts()
		if code, stdout, stderr := run(t, "keycloak", "--config", cfg); code != ExitOK && code != ExitDiff {
			t.Fatalf("keycloak: exit %d\n%s\n%s", code, stdout, stderr)
		}
		if listed := kc.Calls()["GET /groups"]; listed == 0 || tip() == "" {
			t.Errorf("without the ref: %d listings, ref %q (was %s); want a full pass that writes it", listed, tip(), before)
		}
	})

	t.Run("keycloak_state: off", func(t *testing.T) {
		gittest.Git(t, repo, "update-ref", "-d", ref)
		writeFile(t, cfg, "keycloak_state: off\n"+string(mustRead(t, cfg)))
		for range 2 {
			if listed, _ := sync(); listed == 0 {
				t.Errorf("with keycloak_state: off a pass did not list the realm")
			}
		}
		if got := tip(); got != "" {
			t.Errorf("with keycloak_state: off the state ref was written: %s", got)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(cfg), "off")); err == nil {
			t.Errorf("keycloak_state: off was taken for a file name")
		}
	})
}

// gitIn runs git in dir with stdin.
func gitIn(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	out, err := gittest.GitErr(dir, []byte(stdin), args...)
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return out
}
