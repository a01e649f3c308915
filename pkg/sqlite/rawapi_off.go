//go:build norawapi

package sqlite

// rawOff: built with -tags norawapi, the replay store goes without
// the C API (raw.go), the variant its benchmark is measured beside.
const rawOff = true
