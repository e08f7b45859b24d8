package composecheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDashboardNamesWhatSigNozStores checks deploy/signoz's dashboard
// against how SigNoz stores and queries metrics (signoz-otel-collector's
// exporter/signozclickhousemetrics writes a histogram as <name>.bucket with
// le, <name>.count, .sum, .min and .max; SigNoz's pkg/telemetrymetrics
// looks the exact name up, and takes a histogram's percentiles from its
// buckets): a percentile names a .bucket series, a histogram is never named
// bare, and no filter hard-codes a service name (OTEL_SERVICE_NAME can
// change it): each is a dashboard variable, defined.
func TestDashboardNamesWhatSigNozStores(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "signoz", "northpole-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Description string `json:"description"`
		Variables   map[string]struct {
			Name string `json:"name"`
		} `json:"variables"`
		Widgets []struct {
			Title string `json:"title"`
			Query struct {
				Builder struct {
					QueryData []struct {
						Aggregations []struct {
							MetricName       string `json:"metricName"`
							SpaceAggregation string `json:"spaceAggregation"`
						} `json:"aggregations"`
						Filter struct {
							Expression string `json:"expression"`
						} `json:"filter"`
					} `json:"queryData"`
				} `json:"builder"`
			} `json:"query"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, v := range d.Variables {
		defined[v.Name] = true
	}
	percentile := regexp.MustCompile(`^p\d+$`)
	histograms := map[string]bool{} // bases of the series a histogram is stored as
	for _, w := range d.Widgets {
		for _, q := range w.Query.Builder.QueryData {
			for _, a := range q.Aggregations {
				for _, suffix := range []string{".bucket", ".count", ".sum"} {
					if base, ok := strings.CutSuffix(a.MetricName, suffix); ok {
						histograms[base] = true
					}
				}
			}
		}
	}
	panels := 0
	for _, w := range d.Widgets {
		for _, q := range w.Query.Builder.QueryData {
			for _, a := range q.Aggregations {
				panels++
				if percentile.MatchString(a.SpaceAggregation) && !strings.HasSuffix(a.MetricName, ".bucket") {
					t.Errorf("%s: %s of %s, want the histogram's .bucket series", w.Title, a.SpaceAggregation, a.MetricName)
				}
				if histograms[a.MetricName] {
					t.Errorf("%s: names the histogram %s bare; SigNoz stores .bucket, .count, .sum", w.Title, a.MetricName)
				}
			}
			e := q.Filter.Expression
			if strings.Contains(e, "service.name = '") || strings.Contains(e, `service.name = "`) {
				t.Errorf("%s: filter %q hard-codes a service name; use a variable", w.Title, e)
			}
			for _, m := range regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`).FindAllStringSubmatch(e, -1) {
				if !defined[m[1]] {
					t.Errorf("%s: filter %q uses $%s, which the dashboard does not define", w.Title, e, m[1])
				}
			}
		}
	}
	if panels == 0 || len(histograms) < 2 {
		t.Errorf("%d aggregations, histograms %v: the dashboard did not parse as expected", panels, histograms)
	}
	if strings.Contains(d.Description, "wait for") {
		t.Errorf("description %q says some panels wait for metrics", d.Description)
	}
}
