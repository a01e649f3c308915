package external

import (
	"errors"
	"testing"

	"github.com/redeliver/redeliver/pkg/escape"
	"github.com/redeliver/redeliver/pkg/proc"
)

// TestAnswerWords: the consumer's stderr lines an exec failure quotes come
// after the answer's words, so a report can put them on lines of their
// own; Short leaves them out.
func TestAnswerWords(t *testing.T) {
	tests := []struct {
		name        string
		a           Answer
		long, short string
	}{
		{"acked", Answer{Kind: Acked}, "acked", "acked"},
		{"an exit without stderr", Answer{Kind: Unacked, Status: 3, Err: errors.New("exit status 3")}, "unacked (exit status 3)", "unacked (exit status 3)"},
		{"an exit with stderr", Answer{Kind: Unacked, Status: 3, Err: errors.New("exit status 3" + proc.StderrIntro + "first" + escape.QuoteSep + "second")},
			"unacked (exit status 3)" + proc.StderrIntro + "first\n    second", "unacked (exit status 3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.String(); got != tt.long {
				t.Errorf("String() = %q, want %q", got, tt.long)
			}
			if got := tt.a.Short(); got != tt.short {
				t.Errorf("Short() = %q, want %q", got, tt.short)
			}
		})
	}
}
