package containerimage

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction with its continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

// parseDockerfile splits text into stages, each starting with its FROM. It
// knows what this repository's Dockerfile uses: comments, blank lines and
// backslash continuations (comment lines inside a continuation are dropped, as
// Docker does).
func parseDockerfile(text string) [][]instruction {
	var stages [][]instruction
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" || len(stages) == 0 {
			stages = append(stages, nil)
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(trimmed)
		flush()
	}
	flush()
	return stages
}

// fields splits s at white space, keeping double-quoted parts (quotes removed) whole.
func fields(s string) []string {
	var out []string
	var cur strings.Builder
	inQuote, started := false, false
	for _, r := range s {
		switch {
		case r == '"':
			inQuote, started = !inQuote, true
		case (r == ' ' || r == '\t') && !inQuote:
			if started {
				out = append(out, cur.String())
			}
			cur.Reset()
			started = false
		default:
			cur.WriteRune(r)
			started = true
		}
	}
	if started {
		out = append(out, cur.String())
	}
	return out
}

// copyInstr is a COPY with its flags split off.
type copyInstr struct {
	flags     map[string]string
	src, dest string
}

func parseCopy(args string) copyInstr {
	c := copyInstr{flags: map[string]string{}}
	f := fields(args)
	for len(f) > 0 && strings.HasPrefix(f[0], "--") {
		k, v, _ := strings.Cut(strings.TrimPrefix(f[0], "--"), "=")
		c.flags[k] = v
		f = f[1:]
	}
	if len(f) >= 2 {
		c.src, c.dest = strings.Join(f[:len(f)-1], " "), f[len(f)-1]
	}
	return c
}

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDockerfileInStep checks that the Dockerfile builds what Build builds:
// the same binary path, build flags, user, entrypoint, command, environment,
// certificate path and labels. Change one side and this fails.
func TestDockerfileInStep(t *testing.T) {
	stages := parseDockerfile(readRepoFile(t, "Dockerfile"))
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and a final one", len(stages))
	}
	buildStage, final := stages[len(stages)-2], stages[len(stages)-1]

	t.Run("build stage", func(t *testing.T) {
		from := fields(buildStage[0].args)
		img := ""
		for _, f := range from {
			if strings.HasPrefix(f, "golang:") {
				img = f
			}
		}
		gomod := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindStringSubmatch(readRepoFile(t, "go.mod"))
		tag := regexp.MustCompile(`^golang:(\d+)\.(\d+)$`).FindStringSubmatch(img)
		if gomod == nil || tag == nil {
			t.Fatalf("build stage FROM %q: want golang:MAJOR.MINOR (go.mod go line %q)", buildStage[0].args, gomod)
		}
		if atoi(t, tag[1])*1000+atoi(t, tag[2]) < atoi(t, gomod[1])*1000+atoi(t, gomod[2]) {
			t.Errorf("build stage %s is older than go.mod's go %s.%s", img, gomod[1], gomod[2])
		}
		var build string
		for _, in := range buildStage {
			if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
				build = in.args
			}
		}
		f := fields(build)
		i := slices.Index(f, "-ldflags")
		if i < 0 || i+1 >= len(f) || f[i+1] != LDFlags("${VERSION}", "${REVISION}") {
			t.Errorf("go build in the Dockerfile: %q, want -ldflags %q", build, LDFlags("${VERSION}", "${REVISION}"))
		}
		for _, want := range []string{GoBuildEnv, "-trimpath", "./cmd/waldur-gitops"} {
			if !slices.Contains(f, want) {
				t.Errorf("go build in the Dockerfile: %q lacks %s", build, want)
			}
		}
		if i := slices.Index(f, "-o"); i < 0 || i+1 >= len(f) || !slices.ContainsFunc(final, func(in instruction) bool {
			c := parseCopy(in.args)
			return in.cmd == "COPY" && c.src == f[i+1] && c.dest == BinaryPath
		}) {
			t.Errorf("the final stage does not copy the go build output to %s", BinaryPath)
		}
	})

	t.Run("final stage", func(t *testing.T) {
		if got := fields(final[0].args); !slices.Equal(got, []string{"scratch"}) {
			t.Errorf("final stage FROM %q, want scratch", final[0].args)
		}
		last := map[string]string{}
		var copies []copyInstr
		var env, labels []string
		for _, in := range final {
			last[in.cmd] = in.args
			switch in.cmd {
			case "COPY":
				copies = append(copies, parseCopy(in.args))
			case "ENV":
				env = append(env, fields(in.args)...)
			case "LABEL":
				labels = append(labels, fields(in.args)...)
			case "RUN", "ADD":
				t.Errorf("final stage has %s %s: scratch has no shell, use COPY", in.cmd, in.args)
			}
		}
		if last["USER"] != User {
			t.Errorf("USER %q, want %q", last["USER"], User)
		}
		if last["WORKDIR"] != WorkingDir {
			t.Errorf("WORKDIR %q, want %q", last["WORKDIR"], WorkingDir)
		}
		for _, tc := range []struct {
			cmd  string
			want []string
		}{{"ENTRYPOINT", []string{BinaryPath}}, {"CMD", DefaultCmd}} {
			var got []string
			if err := json.Unmarshal([]byte(last[tc.cmd]), &got); err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("%s %s (%v), want the exec form %q", tc.cmd, last[tc.cmd], err, tc.want)
			}
		}
		slices.Sort(env)
		wantEnv := Env()
		slices.Sort(wantEnv)
		if !slices.Equal(env, wantEnv) {
			t.Errorf("ENV %q, want %q", env, wantEnv)
		}
		for _, want := range []string{LabelTitle + "=" + Title, LabelSource + "=" + Source, LabelVersion + "=${VERSION}"} {
			if !slices.Contains(labels, want) {
				t.Errorf("LABEL %q lacks %s", labels, want)
			}
		}
		dests := map[string]copyInstr{}
		for _, c := range copies {
			dests[c.dest] = c
		}
		for _, p := range []string{BinaryPath, CertFile, "/etc/passwd", "/etc/group", HomeDir} {
			if _, ok := dests[p]; !ok {
				t.Errorf("no COPY to %s in the final stage", p)
			}
		}
		for _, p := range []string{"/etc/passwd", "/etc/group"} {
			if src, want := dests[p].src, "containerimage/rootfs"+p; src != want {
				t.Errorf("COPY to %s from %q, want the embedded file %s", p, src, want)
			}
		}
		if got := dests[HomeDir].flags["chown"]; got != User {
			t.Errorf("COPY to %s --chown=%q, want %s", HomeDir, got, User)
		}
	})

	t.Run("directories", func(t *testing.T) {
		var run string
		for _, in := range buildStage {
			if in.cmd == "RUN" && strings.Contains(in.args, "mkdir") {
				run = in.args
			}
		}
		for _, want := range []string{"chmod 1777 /rootfs/tmp", "chown " + User + " /homeroot" + HomeDir, "/rootfs/root"} {
			if !strings.Contains(run, want) {
				t.Errorf("RUN mkdir in the build stage %q lacks %q", run, want)
			}
		}
	})
}

// TestMakefileLDFlags checks that make build and make image link the version
// the way the Dockerfile and this package do.
func TestMakefileLDFlags(t *testing.T) {
	mk := readRepoFile(t, "Makefile")
	m := regexp.MustCompile(`(?m)^LDFLAGS\s*:?=\s*(.*)$`).FindStringSubmatch(mk)
	if m == nil || strings.TrimSpace(m[1]) != LDFlags("$(VERSION)", "$(COMMIT)") {
		t.Errorf("Makefile LDFLAGS = %q, want %q", m, LDFlags("$(VERSION)", "$(COMMIT)"))
	}
	for _, target := range []string{"build", "image"} {
		recipe := regexp.MustCompile(`(?ms)^` + target + `:[^\n]*\n((?:\t[^\n]*\n)+)`).FindStringSubmatch(mk)
		if recipe == nil {
			t.Errorf("Makefile has no %s target", target)
			continue
		}
		for _, want := range []string{GoBuildEnv, "-trimpath", "-ldflags '$(LDFLAGS)'"} {
			if !strings.Contains(recipe[1], want) {
				t.Errorf("Makefile %s recipe lacks %s:\n%s", target, want, recipe[1])
			}
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
