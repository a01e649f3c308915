package suite

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/scenario"
)

func TestCollect(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"b.yaml", "a.yml", "notes.txt", "sub/c.yaml"} {
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x"), 0o644)
	}
	got, err := Collect([]string{dir, filepath.Join(dir, "b.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	var rel []string
	for _, g := range got {
		r, _ := filepath.Rel(dir, g)
		rel = append(rel, filepath.ToSlash(r))
	}
	if strings.Join(rel, ",") != "a.yml,b.yaml,sub/c.yaml" {
		t.Errorf("Collect = %v, want a.yml, b.yaml, sub/c.yaml once each, in order", rel)
	}
	var ie *problem.Error
	if _, err := Collect([]string{filepath.Join(dir, "missing")}); !errors.As(err, &ie) {
		t.Errorf("missing path: %v, want an InputError", err)
	}
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	if _, err := Collect([]string{empty}); !errors.As(err, &ie) {
		t.Errorf("empty folder: %v, want an InputError", err)
	}
}

func TestDBPaths(t *testing.T) {
	dir := t.TempDir()
	two := []*scenario.Scenario{{File: "scenarios/a.yaml"}, {File: "scenarios/causes/b.yaml"}}
	tests := []struct {
		name string
		db   string
		in   []*scenario.Scenario
		want string
		err  string
	}{
		{"memory", ":memory:", two, ":memory:,:memory:", ""},
		{"one file", filepath.Join(dir, "x.db"), two[:1], filepath.Join(dir, "x.db"), ""},
		{"a file for two", filepath.Join(dir, "x.db"), two, "", "names one database file, but 2 scenario files were given"},
		{"a folder", dir + string(filepath.Separator), two, filepath.Join(dir, "scenarios-a.db") + "," + filepath.Join(dir, "scenarios-causes-b.db"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := dbPaths(tt.in, tt.db)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || strings.Join(got, ",") != tt.want {
				t.Errorf("dbPaths = %v, %v; want %s", got, err, tt.want)
			}
		})
	}
}
