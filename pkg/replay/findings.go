package replay

import (
	"context"

	"github.com/redeliver/redeliver/pkg/ledger"
)

// listedJSON is one line of --findings: one entry behind a capture finding.
type listedJSON struct {
	Finding    string   `json:"finding"`
	ID         string   `json:"id,omitempty"`
	Key        string   `json:"key,omitempty"`
	Deliveries int64    `json:"deliveries,omitempty"`
	IDs        []string `json:"ids,omitempty"`
	First      string   `json:"first"`          // file:line, as the JSON report writes places
	Then       string   `json:"then,omitempty"` // identity-reuse: the first delivery with another payload
}

// writeFindings writes every entry behind the capture findings into path,
// one JSON object a line. The file appears whole or not at all: it is
// written beside path under another name and renamed over it at the end.
func writeFindings(ctx context.Context, path string, log ledger.CaptureLog) error {
	return ledger.WriteFindings(path, func(add func(v any) error) error {
		return log.List(ctx, func(l ledger.Listed) error {
			return add(listedJSON{Finding: l.Finding, ID: l.ID, Key: l.Key, Deliveries: l.Deliveries, IDs: l.IDs,
				First: l.First.String(), Then: thenOf(l)})
		})
	})
}

func thenOf(l ledger.Listed) string {
	if l.Then.File == "" {
		return ""
	}
	return l.Then.String()
}
