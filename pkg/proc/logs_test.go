package proc

import (
	"os"
	"path/filepath"
	"testing"
)

// TestConsumerLogsKeepLines: each stream's output is cut into lines
// however it arrives, marked with its stream, the values of the
// environment's secret variables and the secrets redact recognises are
// masked, and the last line without an end is kept.
func TestConsumerLogsKeepLines(t *testing.T) {
	for _, tt := range []struct {
		name   string
		env    []string
		writes []string
		want   string
	}{
		{"lines in pieces", nil, []string{"lis", "tening\nre", "ady\r\n"},
			"stderr | listening\nstderr | ready\n"},
		{"last line without an end", nil, []string{"a\nb"},
			"stderr | a\nstderr | b\n"},
		{"a secret variable's value", []string{"STRIPE_KEY=sk_live_abcdef", "HOME=/home/x", "DB_PASSWORD=abc"},
			[]string{"key sk_live_abcdef home /home/x pw abc\n"},
			"stderr | key xxxxx home /home/x pw abc\n"},
		{"a URL's password", nil, []string{"db postgres://u:hunter22@h/db\n"},
			"stderr | db postgres://u:xxxxx@h/db\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := &ConsumerLogs{Dir: filepath.Join(t.TempDir(), "logs")}
			f, err := l.open(2, 3, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			w := &lines{to: f, stream: "stderr"}
			for _, s := range tt.writes {
				w.Write([]byte(s))
			}
			w.end()
			f.ended() // the stdout stream, which wrote nothing
			files := l.Files()
			if len(files) != 1 || filepath.Base(files[0]) != "instance-2.start-3.log" {
				t.Fatalf("files %v, want one instance-2.start-3.log", files)
			}
			got, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
