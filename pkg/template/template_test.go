package template

import (
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	vals := map[string]string{"deliveries": "2", "rows.shipments": "1", "data.orderId": "o-1"}
	lookup := func(n string) string { return vals[n] }
	tests := []struct {
		name, in, want string
		fields         []string
	}{
		{"plain", "rejected", "rejected", nil},
		{"two fields", "{deliveries} calls, {rows.shipments} shipment row", "2 calls, 1 shipment row", []string{"deliveries", "rows.shipments"}},
		{"key", "payment-{data.orderId}", "payment-o-1", []string{"data.orderId"}},
		{"spaces in braces", "{ deliveries }", "2", []string{"deliveries"}},
		{"escaped braces", "{{literal}} {deliveries}", "{literal} 2", []string{"deliveries"}},
		{"empty", "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got := tp.Expand(lookup); got != tt.want {
				t.Errorf("Expand = %q, want %q", got, tt.want)
			}
			if got := strings.Join(tp.Fields(), ","); got != strings.Join(tt.fields, ",") {
				t.Errorf("Fields = %q, want %q", got, tt.fields)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"{deliveries", "not closed"},
		{"a {} b", "empty"},
		{"a } b", "stray }"},
		{"{a{b}", "contains {"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := Parse(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse(%q) error = %v, want it to mention %q", tt.in, err, tt.want)
			}
		})
	}
}
