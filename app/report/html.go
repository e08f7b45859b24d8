package report

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/northpole-workshop/northpole/otel/backend/servicemap"
)

//go:embed page.html.tmpl
var files embed.FS

var page = template.Must(template.New("page.html.tmpl").Funcs(template.FuncMap{
	"add": func(a, b int) int { return a + b },
}).ParseFS(files, "page.html.tmpl"))

// serviceMap is the map as servicemap draws it, and its table; Topics when
// it has a node per topic.
type serviceMap struct {
	SVG    template.HTML
	Text   string
	Topics bool
}

// newServiceMap draws g. The SVG is trusted markup: servicemap.WriteSVG
// writes it from numbers and escaped names only.
func newServiceMap(g servicemap.Graph) *serviceMap {
	var svg, text bytes.Buffer
	if err := g.WriteSVG(&svg); err != nil {
		return nil
	}
	if err := g.WriteText(&text); err != nil {
		return nil
	}
	topics := slices.ContainsFunc(g.Nodes, func(n servicemap.Node) bool { return n.Topic != "" })
	return &serviceMap{SVG: template.HTML(svg.String()), Text: text.String(), Topics: topics} //nolint:gosec // WriteSVG escapes every name it writes
}

// Write writes the page of in as HTML.
func Write(w io.Writer, in Input) error {
	if err := page.Execute(w, Build(in)); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// FileName is the page's name in an output directory.
const FileName = "report.html"

// WriteFile writes the page of in to dir/report.html.
func WriteFile(dir string, in Input) error {
	var b bytes.Buffer
	if err := Write(&b, in); err != nil {
		return err
	}
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	return nil
}

// CheckDir makes dir if it is missing and checks that files can be written
// in it, so that a command can refuse a bad --out before it runs.
func CheckDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create the output directory: %w", err)
	}
	f, err := os.CreateTemp(dir, ".northpole-write-check-*")
	if err != nil {
		return fmt.Errorf("cannot write in the output directory: %w", err)
	}
	name := f.Name()
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot write in the output directory: %w", err)
	}
	return os.Remove(name)
}
