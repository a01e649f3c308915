//go:build nobloom

package sqlite

// bloomOff: built with -tags nobloom, the replay store goes without
// the filter of the markers written (seen.go), the variant its benchmark is measured beside.
const bloomOff = true
