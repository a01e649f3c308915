package sqlproxy

import (
	"context"
	"math/big"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// TestBoundValues: the values pgx binds through the proxy, in the formats
// it picks (text for strings, binary for numbers, booleans, UUIDs,
// numerics), are in the trace as text, a NULL as one.
func TestBoundValues(t *testing.T) {
	p, dsn := through(t)
	c := connect(t, dsn)
	ctx := context.Background()
	w, err := p.Watch(nil)
	if err != nil {
		t.Fatal(err)
	}
	uuid := pgtype.UUID{Bytes: [16]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8}, Valid: true}
	num := pgtype.Numeric{Int: big.NewInt(-1234567), Exp: -3, Valid: true}
	rows, err := c.Query(ctx, "SELECT $1::text, $2::int8, $3::int4, $4::bool, $5::float8, $6::numeric, $7::uuid, $8::text, $9::jsonb, $10::int2",
		"payment-O-1", int64(-42), int32(7), true, 1.5, num, uuid, nil, map[string]int{"a": 1}, int16(3))
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	got := w.Stop()
	if len(got) != 1 {
		t.Fatalf("%d statements, want 1: %+v", len(got), got)
	}
	var texts []string
	for _, v := range got[0].Params {
		switch {
		case v.Null:
			texts = append(texts, "NULL")
		case v.Undecoded:
			texts = append(texts, "undecoded "+v.Text)
		default:
			texts = append(texts, v.Text)
		}
	}
	want := []string{"payment-O-1", "-42", "7", "true", "1.5", "-1234.567", "12345678-9abc-def0-0102-030405060708", "NULL", `{"a":1}`, "3"}
	if !slices.Equal(texts, want) {
		t.Errorf("bound %q, want %q", texts, want)
	}
}

// TestNumeric: PostgreSQL's binary numeric as text.
func TestNumeric(t *testing.T) {
	enc := func(weight int16, sign uint16, scale uint16, digits ...uint16) []byte {
		b := []byte{byte(len(digits) >> 8), byte(len(digits)), byte(uint16(weight) >> 8), byte(uint16(weight)), byte(sign >> 8), byte(sign), byte(scale >> 8), byte(scale)}
		for _, d := range digits {
			b = append(b, byte(d>>8), byte(d))
		}
		return b
	}
	for _, tt := range []struct {
		v    []byte
		want string
	}{
		{enc(0, 0, 0, 41), "41"},
		{enc(1, 0, 0, 1, 2345), "12345"},
		{enc(0, 0x4000, 2, 12, 3400), "-12.34"},
		{enc(-1, 0, 4, 5), "0.0005"},
		{enc(2, 0, 0, 1), "100000000"},
		{enc(0, 0, 2), "0.00"},
		{enc(0, 0xC000, 0), "NaN"},
	} {
		got, ok := numeric(tt.v)
		if !ok || got != tt.want {
			t.Errorf("numeric(% x) = %q, %v; want %q", tt.v, got, ok, tt.want)
		}
	}
	if _, ok := numeric([]byte{0, 1, 0, 0, 0, 0, 0, 0}); ok {
		t.Error("a numeric shorter than its digit count was read")
	}
}

// TestMySQLParams: an execute's values as the trace shows them: a NULL,
// text, a date's bytes undecoded, and those after one not read.
func TestMySQLParams(t *testing.T) {
	types := []byte{0xfd, 0, typeLong, 0, typeDate, 0, 0xfd, 0}
	got := mysqlParams([][]byte{nil, []byte("41"), {4, 0xe8, 0x07, 1, 2}}, types, 4)
	want := []Param{{Null: true}, {Text: "41"}, {Text: "04e8070102", Undecoded: true}, {Undecoded: true}}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
