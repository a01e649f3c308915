package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestCallsOnThePage: the consumer that charges without an idempotency
// key, run on the first check of externals.yaml (the provider charges,
// and its answer is lost), is charged twice; the HTML report draws the
// two charges on the payments lane, each under the delivery that made
// it, framed as broken by the invariants they broke, and the breach
// points at the second.
func TestCallsOnThePage(t *testing.T) {
	defer parallel(t)()
	bin := buildConsumer(t)
	src, err := os.ReadFile(filepath.Join(repoRoot, "examples/consumer/scenarios/externals.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The first check alone: the others kill the consumer, and take longer.
	first, _, ok := strings.Cut(string(src), "\n  # Caught here too:")
	if !ok || !strings.Contains(first, "the provider charged, and its answer was lost") {
		t.Fatal("externals.yaml changed: its second check is not where this test cuts it")
	}
	dir := t.TempDir()
	file, page := filepath.Join(dir, "externals.yaml"), filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, []byte(first+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := consumerEnv(t, bin, "charge-without-key")
	withPlainRedeliver(t, env)
	o := redeliver(t, env, "run", file, "--report", "html="+page)
	if o.exit != 1 || !strings.Contains(o.stdout, "invariant external-duplicate broken") {
		t.Fatalf("want exit 1 naming external-duplicate, got\n%s", o)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	lane := regexp.MustCompile(`(?s)<div class="lane external" data-lane="external" data-external="payments"><div class="lane-name">↗ payments</div><div class="track">\n(.*?)</div></div>\n`).FindStringSubmatch(html)
	if lane == nil {
		t.Fatalf("the page has no lane of the calls to payments:\n%s", html)
	}
	marks := regexp.MustCompile(`<div class="call c-(\w+)( broken)?" id="([^"]+)" data-seq="(\d+)" data-kind="\w+"(?: data-broke="([^"]*)")? style="left:min\(([0-9.]+)%`).FindAllStringSubmatch(lane[1], -1)
	var performed []float64
	var broken []string
	for _, m := range marks {
		left, _ := strconv.ParseFloat(m[6], 64)
		if m[1] == "performed" {
			performed = append(performed, left)
		}
		if m[2] != "" && strings.Contains(m[5], "external-duplicate") {
			broken = append(broken, m[3])
		}
	}
	if len(performed) != 2 || len(broken) == 0 {
		t.Fatalf("the payments lane draws %d performed charges and %d broken by external-duplicate, want 2 and at least 1:\n%s", len(performed), len(broken), lane[1])
	}
	// Each charge under its own delivery: the second is where the
	// redelivery was sent or later, the first before it.
	var bars []float64
	for _, m := range regexp.MustCompile(`<div class="bar [^"]*" id="[^"]+" data-seq="\d+"[^>]* style="left:([0-9.]+)%`).FindAllStringSubmatch(html, -1) {
		left, _ := strconv.ParseFloat(m[1], 64)
		bars = append(bars, left)
	}
	if len(bars) < 2 || performed[0] >= bars[1] || performed[1] < bars[1] {
		t.Errorf("the charges are at %v%%, want one under each of the deliveries at %v%%", performed, bars)
	}
	if !regexp.MustCompile(`<li class="breach" data-invariant="external-duplicate" data-bar="` + regexp.QuoteMeta(broken[len(broken)-1]) + `">`).MatchString(html) {
		t.Errorf("the external-duplicate breach does not point at the second charge (%s):\n%s", broken[len(broken)-1], html)
	}
}
