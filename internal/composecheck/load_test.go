package composecheck

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

// repoRoot is the directory holding go.mod, found upward from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// loadCompose loads docker-compose.yml the way `docker compose` does: the
// repository as project directory (relative paths resolve against it),
// schema validation, interpolation of ${VAR:-default} from env (nothing
// else: the developer's environment must not change what is checked),
// consistency checks (depends_on, volumes and networks must exist), with
// every profile enabled so that the elves are checked too. It returns the
// warnings compose-go logged, such as a variable used without a default.
func loadCompose(t *testing.T, env []string, profiles ...string) (*types.Project, []string) {
	t.Helper()
	root := repoRoot(t)
	if len(profiles) == 0 {
		profiles = []string{"*"}
	}
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, "docker-compose.yml")},
		cli.WithWorkingDirectory(root),
		cli.WithEnv(env),
		cli.WithProfiles(profiles),
		cli.WithInterpolation(true),
		cli.WithNormalization(true),
		cli.WithConsistency(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		t.Fatal(err)
	}
	// compose-go reports an unset variable as a logrus warning, not an error.
	logMu.Lock()
	hook := logtest.NewGlobal()
	p, err := opts.LoadProject(context.Background())
	var warnings []string
	for _, e := range hook.AllEntries() {
		warnings = append(warnings, e.Message)
	}
	hook.Reset()
	logMu.Unlock()
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}
	return p, warnings
}

// logMu serializes loads: the warning hook is on logrus's global logger.
var logMu sync.Mutex

var (
	projectOnce sync.Once
	project     *types.Project
	projectWarn []string
)

// theProject is docker-compose.yml loaded once, with no variables set.
func theProject(t *testing.T) *types.Project {
	t.Helper()
	projectOnce.Do(func() { project, projectWarn = loadCompose(t, nil) })
	if project == nil {
		t.Fatal("docker-compose.yml did not load (see the first test that loaded it)")
	}
	return project
}

// env returns a service's environment variable, "" when unset.
func env(s types.ServiceConfig, name string) string {
	if v, ok := s.Environment[name]; ok && v != nil {
		return *v
	}
	return ""
}

// flagValue returns the value of --name in a command line of separate
// arguments (`--name value`; `--name=value` is accepted too).
func flagValue(cmd []string, name string) (string, bool) {
	for i, a := range cmd {
		if a == "--"+name && i+1 < len(cmd) {
			return cmd[i+1], true
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, ok := p.AllServices()[name]
	if !ok {
		t.Fatalf("docker-compose.yml has no service %q", name)
	}
	return s
}
