package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestWriteCapture: the shape of the benchmark capture, for both id shapes.
func TestWriteCapture(t *testing.T) {
	tests := []struct {
		ids    IDs
		wantID *regexp.Regexp
	}{
		{UUID, uuidV4},
		{Sequential, regexp.MustCompile(`^evt-[0-9]+$`)},
	}
	const n = 20000
	for _, tt := range tests {
		t.Run(string(tt.ids), func(t *testing.T) {
			var a, b bytes.Buffer
			if err := WriteCapture(&a, n, 1, tt.ids); err != nil {
				t.Fatal(err)
			}
			if err := WriteCapture(&b, n, 1, tt.ids); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatal("the same seed wrote two different captures")
			}
			orders := map[string]string{} // id → order
			lines := 0
			sc := bufio.NewScanner(&a)
			for sc.Scan() {
				lines++
				var ev struct {
					ID   string `json:"id"`
					Data struct {
						OrderID string `json:"orderId"`
					} `json:"data"`
				}
				if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
					t.Fatalf("line %d: %v", lines, err)
				}
				if !tt.wantID.MatchString(ev.ID) {
					t.Fatalf("line %d: id %q, want %s", lines, ev.ID, tt.wantID)
				}
				if o, ok := orders[ev.ID]; ok && o != ev.Data.OrderID {
					t.Fatalf("line %d: id %s redelivered with order %s, first with %s", lines, ev.ID, ev.Data.OrderID, o)
				}
				orders[ev.ID] = ev.Data.OrderID
			}
			if lines != n {
				t.Errorf("%d lines, want %d", lines, n)
			}
			share := float64(n-len(orders)) / n
			if share < Redeliveries-0.02 || share > Redeliveries+0.02 {
				t.Errorf("%.3f of the lines are redeliveries, want about %.2f", share, Redeliveries)
			}
		})
	}
}

// TestSequentialCaptureUnchanged: the sequential capture is the file the
// benchmarks always replayed (its first lines, byte for byte).
func TestSequentialCaptureUnchanged(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCapture(&b, 3, 1, Sequential); err != nil {
		t.Fatal(err)
	}
	want := `{"specversion":"1.0","id":"evt-0","source":"/orders","type":"order.created","time":"2026-11-01T10:00:00Z","data":{"orderId":"order-0"}}` + "\n"
	if got, _, _ := strings.Cut(b.String(), "\n"); got+"\n" != want {
		t.Errorf("first line %s, want %s", got, want)
	}
}

func TestParseIDs(t *testing.T) {
	for _, tt := range []struct {
		in      string
		wantErr bool
	}{{"uuid", false}, {"sequential", false}, {"ulid", true}, {"", true}} {
		if _, err := ParseIDs(tt.in); (err != nil) != tt.wantErr {
			t.Errorf("ParseIDs(%q) error %v, want error %v", tt.in, err, tt.wantErr)
		}
	}
	if err := WriteCapture(&bytes.Buffer{}, 1, 1, "ulid"); err == nil {
		t.Error("WriteCapture wrote a capture with an unknown id shape")
	}
}

func TestMedians(t *testing.T) {
	runs := []Run{
		{UUID, Memory, "redeliver", 3, 100, 5}, {UUID, Memory, "peer", 6, 200, 4},
		{UUID, Memory, "redeliver", 5, 120, 7}, {UUID, Memory, "peer", 4, 180, 5},
		{UUID, Memory, "redeliver", 4, 90, 6}, {UUID, Memory, "peer", 9, 190, 3},
		{Sequential, File, "redeliver", 1, 50, 1}, {Sequential, File, "peer", 2, 60, 2},
	}
	got := Medians(runs)
	want := []Result{
		{UUID, Memory, 4, 6, 100, 190, 6, 4},
		{Sequential, File, 1, 2, 50, 60, 1, 2},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("result %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if s := got[0].Speed(); s != 1.5 {
		t.Errorf("speed %v, want 1.5", s)
	}
	if c := got[0].CPURatio(); c != 1.5 {
		t.Errorf("CPU ratio %v, want 1.5", c)
	}
	if m := median([]float64{1, 2, 3, 10}); m != 2.5 {
		t.Errorf("median of an even count %v, want 2.5", m)
	}
}

func TestCheckPeer(t *testing.T) {
	dir := t.TempDir()
	if err := CheckPeer(dir); !errors.Is(err, ErrNoPeer) {
		t.Errorf("an empty folder: %v, want ErrNoPeer", err)
	}
	// Installed by an npm that did not run better-sqlite3's build script.
	mod := filepath.Join(dir, "node_modules", "better-sqlite3")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "peer.js"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckPeer(dir); !errors.Is(err, ErrNoPeer) || !strings.Contains(err.Error(), "native module was not built") {
		t.Errorf("a peer without its native module: %v, want ErrNoPeer naming the build", err)
	}
	release := filepath.Join(mod, "build", "Release")
	if err := os.MkdirAll(release, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(release, "better_sqlite3.node"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckPeer(dir); err != nil {
		t.Errorf("an installed peer: %v", err)
	}
}
