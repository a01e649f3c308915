package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/proc/proctest"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestReadmeIsAFrontDoor: README stays short and every relative link in it
// and in docs/ names a file the repository ships.
func TestReadmeIsAFrontDoor(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > 300 {
		t.Errorf("README.md has %d lines; keep it under 300 and move reference material into docs/", n)
	}
	for _, section := range []string{"## Install", "## The two commands", "## A tour", "## Test your own consumer", "## Performance", "## Documentation"} {
		if !strings.Contains(string(data), "\n"+section) {
			t.Errorf("README.md has no %q section", section)
		}
	}
	docs, _ := filepath.Glob("docs/*.md")
	link := regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`)
	for _, file := range append([]string{"README.md"}, docs...) {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(file), target)); err != nil {
				t.Errorf("%s links to %s, which the repository does not ship", file, target)
			}
		}
	}
}

// TestGoInstallTakesTheModule: README's `go install
// github.com/redeliver/redeliver@latest` refuses a module whose go.mod has
// a replace or exclude directive ("It must not contain directives that
// would cause it to be interpreted differently than if it were the main
// module"), so the patched copies are packages of this module, imported by
// its own path, not replacements.
func TestGoInstallTakesTheModule(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "replace" || f[0] == "exclude") {
			t.Errorf("go.mod:%d: %s: go install ...@latest refuses a module with this directive", i+1, f[0])
		}
	}
}

// TestNoUnshippedReferences: nothing in the repository refers to documents
// it does not ship.
func TestNoUnshippedReferences(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("git", "ls-files").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): the file list comes from git ls-files", err)
	}
	// Lower-cased phrases, matched as words (a letter after one is another word).
	forbidden := []string{"design.md", "style.md", "perf-notes", "the seed", "the article", "the design", "seed-peer"}
	for _, file := range strings.Fields(string(out)) {
		if file == "readme_test.go" || strings.HasPrefix(file, "pkg/kafka/_kfake/") {
			// The patched copy of kfake keeps its authors' words as
			// published ("the seed" of a random sweep is theirs).
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			continue // listed but deleted in the work tree
		}
		lower := bytes.ToLower(data)
		for _, phrase := range forbidden {
			for at := 0; ; {
				i := bytes.Index(lower[at:], []byte(phrase))
				if i < 0 {
					break
				}
				at += i + len(phrase)
				if at < len(lower) && (lower[at] >= 'a' && lower[at] <= 'z') {
					continue // "the seeded", "the designer": another word
				}
				line := 1 + bytes.Count(lower[:at], []byte("\n"))
				t.Errorf("%s:%d: refers to %q, which the repository does not ship", file, line, phrase)
			}
		}
	}
}

// TestReadmeTour runs the commands of README's tour exactly as written, in a
// copy of the shipped scenarios: each must exit 0, or 1 where its comment
// says "exit 1" (or "exit 2").
func TestReadmeTour(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## A tour"
		case in && strings.HasPrefix(line, "    "):
			lines = append(lines, strings.TrimPrefix(line, "    "))
		}
	}
	if len(lines) < 5 {
		t.Fatalf("README's tour has %d commands; want the tour's code block", len(lines))
	}
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("sqlite3 is not installed; .ci/run installs it")
		}
		t.Skip("sqlite3 is not installed: the tour uses it (apt-get install sqlite3)")
	}
	var script strings.Builder
	for _, line := range lines {
		want := 0
		if strings.Contains(line, "exit 1") {
			want = 1
		}
		if strings.Contains(line, "exit 2") {
			want = 2
		}
		fmt.Fprintf(&script, "%s\nrc=$?; [ $rc -eq %d ] || { echo 'tour: exit '$rc', want %d: %s' >&2; exit 1; }\n", line, want, want, strings.ReplaceAll(line, "'", ""))
	}
	dir := t.TempDir()
	txtar := "exec bash tour.sh\n-- tour.sh --\n" + script.String()
	if err := os.WriteFile(filepath.Join(dir, "tour.txtar"), []byte(txtar), 0o644); err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: dir,
		Setup: func(env *testscript.Env) error {
			env.Setenv("NO_COLOR", "1")
			env.Setenv("GITHUB_ACTIONS", "")
			env.Setenv(proctest.ProgramEnv, os.Getenv(proctest.ProgramEnv))
			return copyTree("scenarios", filepath.Join(env.WorkDir, "scenarios"))
		},
	})
}
