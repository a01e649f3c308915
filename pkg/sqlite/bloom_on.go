//go:build !nobloom

package sqlite

// bloomOff: the replay store uses the filter of the markers written (seen.go). Built with -tags nobloom, it
// does not: the variant its benchmark is measured beside
// (docs/performance.md).
const bloomOff = false
