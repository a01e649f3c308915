package external

// finding is one line of a target replay's --findings: one broken
// invariant, for one key or event.
type finding struct {
	Finding string `json:"finding"` // the invariant
	ID      string `json:"id,omitempty"`
	Key     string `json:"key,omitempty"`
	Detail  string `json:"detail"`
	At      string `json:"at,omitempty"` // file:line of the delivery behind it, as the JSON report writes places
}
