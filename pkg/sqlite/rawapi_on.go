//go:build !norawapi

package sqlite

// rawOff: the replay store uses the C API (raw.go). Built with -tags norawapi, it
// does not: the variant its benchmark is measured beside
// (docs/performance.md).
const rawOff = false
