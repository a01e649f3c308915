package target

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/redeliver/redeliver/pkg/runner"
)

// finding is one line of a target replay's --findings: one broken
// invariant, for one key or event.
type finding struct {
	Finding string `json:"finding"` // the invariant
	ID      string `json:"id,omitempty"`
	Key     string `json:"key,omitempty"`
	Detail  string `json:"detail"`
	At      string `json:"at,omitempty"` // file:line of the delivery behind it, as the JSON report writes places
}

// WriteFindings writes every invariant a replay into a target broke into
// path, one JSON object a line (an empty file when none broke). The file
// appears whole or not at all: it is written beside path under another
// name and renamed over it at the end.
func WriteFindings(path string, res *runner.FileResult) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), ".redeliver-findings-*")
	if err != nil {
		return fmt.Errorf("write the findings %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	w := bufio.NewWriterSize(f, 1<<16)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, c := range res.Checks {
		for _, v := range c.Violations {
			l := finding{Finding: string(v.Invariant), ID: v.EventID, Detail: v.Detail}
			if v.By != nil {
				l.Key = v.By.Key
				if v.By.Pos.File != "" {
					l.At = v.By.Pos.String()
				}
			}
			if err := enc.Encode(l); err != nil {
				return err
			}
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write the findings %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("write the findings %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write the findings %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write the findings %s: %w", path, err)
	}
	return nil
}
