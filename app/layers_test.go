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
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkgs++
		from := fields[0]
		for _, to := range fields[1:] {
			if !strings.HasPrefix(to, module) {
				continue
			}
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
