// Package app_test checks that the module's imports run one way, top to
// bottom: commands (cmd/), applications (app/), the components
// (processors/, producers/), libraries (the rest of internal/, otel/,
// risingwave/). Test support (internal/testsupport/) is for tests only.
package app_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/northpole-workshop/northpole/"

// layer is the layer of a package of this module, by its path: 4 commands,
// 3 applications, 2 components, 1 libraries, 0 test support.
func layer(path string) int {
	p := strings.TrimPrefix(path, module)
	switch {
	case strings.HasPrefix(p, "cmd/"):
		return 4
	case strings.HasPrefix(p, "app/"):
		return 3
	case strings.HasPrefix(p, "processors/"), strings.HasPrefix(p, "producers"):
		return 2
	case strings.HasPrefix(p, "internal/testsupport/"):
		return 0
	}
	return 1
}

func TestImportsRunDownward(t *testing.T) {
	pkgs := 0
	for from, imports := range goList(t, `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`) {
		pkgs++
		for _, to := range imports {
			lf, lt := layer(from), layer(to)
			switch {
			case lt == 0 && lf != 0:
				t.Errorf("%s imports test support %s (tests only)", from, to)
			case lt > lf && lf != 0:
				t.Errorf("%s (layer %d) imports %s (layer %d), a layer above it", from, lf, to, lt)
			}
		}
	}
	if pkgs < 20 {
		t.Fatalf("go list saw %d packages: not the module", pkgs)
	}
}

// TestTestImportsRunDownward: a package's tests too import only its layer,
// the layers below and test support, so that no application is a fixture
// of a component's tests: a test that needs the whole pipeline lives with
// the application that runs it (app/harness, app/compare).
func TestTestImportsRunDownward(t *testing.T) {
	tests := 0
	for from, imports := range goList(t, `{{.ImportPath}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}`) {
		for _, to := range imports {
			tests++
			if lf, lt := layer(from), layer(to); lt > lf && lf != 0 {
				t.Errorf("the tests of %s (layer %d) import %s (layer %d), a layer above it", from, lf, to, lt)
			}
		}
	}
	if tests < 50 {
		t.Fatalf("go list saw %d test imports of the module: not the module's tests", tests)
	}
}

// goList runs go list with format over the module and returns, for each
// package, the packages of this module the format lists after its path.
func goList(t *testing.T, format string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", format, module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		var mine []string
		for _, to := range fields[1:] {
			if strings.HasPrefix(to, module) && to != fields[0] {
				mine = append(mine, to)
			}
		}
		pkgs[fields[0]] = mine
	}
	return pkgs
}
