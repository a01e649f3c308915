// Package scenarios is the scenario library: the files users run and copy.
// The starter set that `redeliver init` writes is embedded from here, so the
// shipped files and the starter files are the same files.
package scenarios

import "embed"

// Starter is the set `redeliver init` writes: the fixture, the causes
// of duplicates, and one scenario per safe strategy.
//
//go:embed seed-fixture.yaml causes/*.yaml strategies/business-key.yaml strategies/consumer-scoped.yaml strategies/external-key.yaml
var Starter embed.FS
