package external

import (
	"github.com/redeliver/redeliver/pkg/ledger"
	"github.com/redeliver/redeliver/pkg/replay"
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
func WriteFindings(path string, rep *replay.Report) error {
	return ledger.WriteFindings(path, func(add func(v any) error) error {
		for _, v := range rep.Breaches {
			l := finding{Finding: string(v.Invariant), ID: v.EventID, Detail: v.Detail}
			if v.By != nil {
				l.Key = v.By.Key
				if v.By.Pos.File != "" {
					l.At = v.By.Pos.String()
				}
			}
			if err := add(l); err != nil {
				return err
			}
		}
		return nil
	})
}
