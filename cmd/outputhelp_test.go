package cmd

import (
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/report"
)

// TestOutputHelpNamesEveryFormat: the long help of run and replay says
// in words what --format and --report take, so a format added to
// report.Formats is named there too (docs/development.md lists it among
// what a new format touches).
func TestOutputHelpNamesEveryFormat(t *testing.T) {
	t.Parallel()
	head, _, _ := strings.Cut(outputHelp, "\n--report")
	named := map[string]bool{}
	for _, w := range strings.Fields(head) {
		named[strings.Trim(w, ",.()")] = true
	}
	for _, f := range report.Formats {
		if !named[string(f)] {
			t.Errorf("outputHelp does not name the %s format where it lists what --format chooses:\n%s", f, head)
		}
	}
}
