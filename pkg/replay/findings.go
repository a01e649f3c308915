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

// listFindings gives add every entry behind the capture findings, one
// --findings line each.
func listFindings(ctx context.Context, log ledger.CaptureLog, add func(v any) error) error {
	return log.List(ctx, func(l ledger.Listed) error {
		return add(listedJSON{Finding: l.Finding, ID: l.ID, Key: l.Key, Deliveries: l.Deliveries, IDs: l.IDs,
			First: l.First.String(), Then: thenOf(l)})
	})
}

func thenOf(l ledger.Listed) string {
	if l.Then.File == "" {
		return ""
	}
	return l.Then.String()
}
