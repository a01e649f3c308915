package ledger

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// WriteFindings writes a replay's --findings file: each value list hands
// to add becomes one JSON object a line. The file appears whole or not
// at all: it is written beside path under another name and renamed over
// it at the end; on an error nothing is left.
func WriteFindings(path string, list func(add func(v any) error) error) (err error) {
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
	if err := list(enc.Encode); err != nil {
		return err
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
