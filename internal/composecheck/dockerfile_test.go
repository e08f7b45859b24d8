package composecheck

import (
	"bufio"
	"context"
	"fmt"
	"go/version"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distribution/reference"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

func readDockerfile(t *testing.T, file string) []instruction {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []instruction
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// goBuild is the Dockerfile's `RUN ... go build ...` line, taken apart.
type goBuild struct {
	env    []string // VAR=value before `go`
	flags  []string // arguments between `build` and the target, -o and its value left out
	output string   // the -o value
	target string   // the package built
}

func parseGoBuild(run string) (goBuild, error) {
	var b goBuild
	if strings.ContainsAny(run, `"'$&|;`) {
		return b, fmt.Errorf("RUN %q: quotes, variables and shell operators are not understood here; keep the build line plain", run)
	}
	words := strings.Fields(run)
	i := 0
	for ; i < len(words) && strings.Contains(words[i], "="); i++ {
		b.env = append(b.env, words[i])
	}
	if len(words) < i+3 || words[i] != "go" || words[i+1] != "build" {
		return b, fmt.Errorf("RUN %q is not [VAR=value ...] go build ...", run)
	}
	rest := words[i+2:]
	b.target = rest[len(rest)-1]
	for j := 0; j < len(rest)-1; j++ {
		if rest[j] == "-o" && j+1 < len(rest)-1 {
			b.output = rest[j+1]
			j++
			continue
		}
		b.flags = append(b.flags, rest[j])
	}
	if b.output == "" {
		return b, fmt.Errorf("RUN %q has no -o: the next stage could not name the binary", run)
	}
	if !strings.HasPrefix(b.target, "./") {
		return b, fmt.Errorf("RUN %q: the target %q is not a package path in the module", run, b.target)
	}
	return b, nil
}

func TestParseGoBuild(t *testing.T) {
	b, err := parseGoBuild("CGO_ENABLED=0 GOOS=linux go build -trimpath -o /out/x ./cmd/x")
	if err != nil || strings.Join(b.env, " ") != "CGO_ENABLED=0 GOOS=linux" || b.output != "/out/x" || b.target != "./cmd/x" || strings.Join(b.flags, " ") != "-trimpath" {
		t.Errorf("parseGoBuild = %+v, %v", b, err)
	}
	for _, bad := range []string{"go build ./cmd/x", "make build", `go build -o "$OUT" ./cmd/x`, "go build -o /x github.com/a/b"} {
		if _, err := parseGoBuild(bad); err == nil {
			t.Errorf("parseGoBuild(%q) accepted it", bad)
		}
	}
}

// ignored says whether a .dockerignore pattern list leaves rel (a slash path
// relative to the build context) out of the context. Docker matches each
// pattern against the path and against every parent folder of it, anchored
// at the context root ("*.test" matches only at the root, unlike
// .gitignore). Exceptions ("!") and "**" are refused rather than half
// understood.
func ignored(patterns []string, rel string) (bool, error) {
	parts := strings.Split(rel, "/")
	for _, p := range patterns {
		if strings.HasPrefix(p, "!") || strings.Contains(p, "**") {
			return false, fmt.Errorf(".dockerignore pattern %q: not understood by this check", p)
		}
		p = strings.TrimPrefix(path.Clean("/"+p), "/")
		for i := 1; i <= len(parts); i++ {
			ok, err := path.Match(p, strings.Join(parts[:i], "/"))
			if err != nil {
				return false, fmt.Errorf(".dockerignore pattern %q: %w", p, err)
			}
			if ok {
				return true, nil
			}
		}
	}
	return false, nil
}

func TestIgnored(t *testing.T) {
	pats := []string{".git", "/northpole", "*.test", "deploy"}
	for rel, want := range map[string]bool{
		".git/config": true, "northpole": true, "cmd/northpole/main.go": false,
		"x.test": true, "a/x.test": false, "deploy/signoz/a.yaml": true, "go.mod": false,
	} {
		if got, err := ignored(pats, rel); err != nil || got != want {
			t.Errorf("ignored(%q) = %v, %v; want %v", rel, got, err, want)
		}
	}
	if _, err := ignored([]string{"!keep"}, "x"); err == nil {
		t.Error("an exception pattern was accepted")
	}
}

// copyContext copies the repository into dir as `docker build .` would send
// it: without what .dockerignore leaves out.
func copyContext(t *testing.T, root, dir string) {
	t.Helper()
	var patterns []string
	if raw, err := os.ReadFile(filepath.Join(root, ".dockerignore")); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				patterns = append(patterns, line)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		skip, err := ignored(patterns, filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		switch {
		case skip && d.IsDir():
			return filepath.SkipDir
		case skip:
			return nil
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		case !d.Type().IsRegular():
			return nil // symlinks, sockets: none belong to the build
		}
		return copyFile(p, filepath.Join(dir, rel))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// TestDockerfileBuild runs the Dockerfile's go build line, as written there
// (its environment, flags and target), on the build context .dockerignore
// lets through, and then checks that the binary accepts the command line of
// every compose service that runs it. Docker itself is not available here,
// so FROM, COPY and the image are checked by reading, not by building.
func TestDockerfileBuild(t *testing.T) {
	root := repoRoot(t)
	ins := readDockerfile(t, filepath.Join(root, "Dockerfile"))

	var builds []instruction
	var froms []string
	for _, in := range ins {
		switch in.cmd {
		case "FROM":
			froms = append(froms, in.args)
		case "RUN":
			if strings.Contains(in.args, "go build") {
				builds = append(builds, in)
			}
		}
	}
	if len(builds) != 1 {
		t.Fatalf("the Dockerfile has %d RUN lines with go build, want 1", len(builds))
	}
	b, err := parseGoBuild(builds[0].args)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(b.env, "CGO_ENABLED=0") {
		t.Errorf("the go build line does not set CGO_ENABLED=0: the binary would need the builder's C library, which the runtime image lacks")
	}
	checkStages(t, root, ins, froms, b)

	dir := t.TempDir()
	ctxDir := filepath.Join(dir, "context")
	copyContext(t, root, ctxDir)
	bin := filepath.Join(dir, "northpole")
	args := append(append([]string{"build"}, b.flags...), "-o", bin, b.target)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = ctxDir
	cmd.Env = append(os.Environ(), b.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s go %s (in the build context): %v\n%s", strings.Join(b.env, " "), strings.Join(args, " "), err, out)
	}

	// Each service's command, with --help: cobra parses the subcommand and
	// every flag (name and value) before printing the help, so a flag the
	// binary does not have, or a bad duration, fails here.
	if out, err := exec.CommandContext(ctx, bin, "--help").CombinedOutput(); err != nil {
		t.Fatalf("northpole --help: %v\n%s", err, out)
	}
	p := theProject(t)
	for name, s := range northpoleServices(t, p) {
		argv := append(append([]string{}, s.Command...), "--help")
		out, err := exec.CommandContext(ctx, bin, argv...).CombinedOutput()
		if err != nil {
			t.Errorf("%s: northpole %s: %v\n%s", name, strings.Join(argv, " "), err, out)
		}
	}
}

// checkStages: the base images are pinned, the builder's Go is recent
// enough for go.mod (else go build would fetch another toolchain), the final
// stage copies the binary the build line writes, and runs it.
func checkStages(t *testing.T, root string, ins []instruction, froms []string, b goBuild) {
	t.Helper()
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage Dockerfile (builder, runtime), found %d FROM", len(froms))
	}
	var buildStage string
	for _, f := range froms {
		fields := strings.Fields(f)
		if err := pinned(fields[0]); err != nil {
			t.Errorf("FROM %s: %v", f, err)
		}
		if len(fields) == 3 && strings.EqualFold(fields[1], "AS") && strings.HasPrefix(fields[0], "golang:") {
			buildStage = fields[2]
			checkGoVersion(t, root, fields[0])
		}
	}
	if buildStage == "" {
		t.Fatal("no `FROM golang:... AS <name>` builder stage")
	}
	copied := regexp.MustCompile(`^--from=` + regexp.QuoteMeta(buildStage) + `\s+` + regexp.QuoteMeta(b.output) + `\s+(\S+)$`)
	var dest, entry string
	for _, in := range ins {
		if in.cmd == "COPY" {
			if m := copied.FindStringSubmatch(in.args); m != nil {
				dest = m[1]
			}
		}
		if in.cmd == "ENTRYPOINT" {
			entry = in.args
		}
	}
	if dest == "" {
		t.Fatalf("no COPY --from=%s %s into the runtime stage", buildStage, b.output)
	}
	if !strings.Contains(entry, `"`+dest+`"`) {
		t.Errorf("ENTRYPOINT %s does not run %s", entry, dest)
	}
}

func checkGoVersion(t *testing.T, root, image string) {
	t.Helper()
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		t.Fatal(err)
	}
	tagged, ok := named.(reference.Tagged)
	if !ok {
		t.Fatalf("%s: no tag to read the Go version from", image)
	}
	builder := "go" + regexp.MustCompile(`^\d+\.\d+(\.\d+)?`).FindString(tagged.Tag())
	raw, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(string(raw))
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	if !version.IsValid(builder) || version.Compare(builder, "go"+m[1]) < 0 {
		t.Errorf("builder %s has Go %s, older than go.mod's go %s", image, builder, m[1])
	}
}
