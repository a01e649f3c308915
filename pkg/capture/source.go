package capture

import (
	"context"
	"strings"
)

// A SourceOpener opens a log named by a URL — a JetStream stream, a Kafka
// topic — as a capture: its records, each placed where a file has a line
// (OpenRecords).
type SourceOpener func(ctx context.Context, name string, opts Options) (*Reader, error)

// sources are the openers by URL scheme. The broker adapters register
// theirs when they are linked in, so that what reads captures (the
// replay) links no broker client itself.
var sources = map[string]SourceOpener{}

// RegisterSource makes open the reader of every capture named
// scheme://…; it is called from an adapter's init.
func RegisterSource(scheme string, open SourceOpener) { sources[scheme] = open }

// Source is the opener of a capture named by a URL of a registered
// scheme, and false for anything else (a file, "-").
func Source(name string) (SourceOpener, bool) {
	scheme, _, ok := strings.Cut(name, "://")
	if !ok {
		return nil, false
	}
	open, ok := sources[scheme]
	return open, ok
}
