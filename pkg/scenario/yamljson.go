package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// Event data written in YAML becomes the JSON a delivery carries.

// toJSON writes a YAML value as JSON. Mapping keys become strings; values
// JSON cannot hold (.inf, .nan, binary) are refused.
func toJSON(n *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, n, 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// maxDataSize bounds one event's data once aliases are expanded, so that a
// few lines of nested aliases cannot expand into gigabytes.
const maxDataSize = 1 << 20

// maxFileDataSize bounds the data of all a file's events once aliases are
// expanded: one large anchor referenced by many steps stays within
// maxDataSize each, and would otherwise still make gigabytes.
const maxFileDataSize = 8 << 20

// maxFileSteps bounds the steps of one file once aliases are expanded.
const maxFileSteps = 20_000

func writeJSON(b *bytes.Buffer, n *yaml.Node, depth int) error {
	if depth > 100 {
		return errors.New("nested more than 100 levels deep")
	}
	if b.Len() > maxDataSize {
		return fmt.Errorf("it expands to more than %d KiB (aliases included)", maxDataSize>>10)
	}
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		return writeJSONObject(b, n, depth)
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, e := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case yaml.ScalarNode:
		return writeJSONScalar(b, n)
	default:
		return fmt.Errorf("line %d: unsupported YAML node", n.Line)
	}
}

// writeJSONObject writes a mapping as a JSON object; its keys must be
// plain values, each once.
func writeJSONObject(b *bytes.Buffer, n *yaml.Node, depth int) error {
	b.WriteByte('{')
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: a mapping key must be a plain value", k.Line)
		}
		if seen[k.Value] {
			return fmt.Errorf("line %d: key %q appears twice", k.Line, k.Value)
		}
		seen[k.Value] = true
		if i > 0 {
			b.WriteByte(',')
		}
		kj, _ := json.Marshal(k.Value)
		b.Write(kj)
		b.WriteByte(':')
		if err := writeJSON(b, n.Content[i+1], depth+1); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// writeJSONScalar writes a scalar as the JSON value its tag says.
func writeJSONScalar(b *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!null":
		b.WriteString("null")
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			return err
		}
		b.WriteString(strconv.FormatBool(v))
	case "!!int":
		var v any
		if err := n.Decode(&v); err != nil {
			return err
		}
		b.WriteString(fmt.Sprint(v))
	case "!!float":
		var v float64
		if err := n.Decode(&v); err != nil {
			return err
		}
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return fmt.Errorf("line %d: %s is not a JSON number", n.Line, n.Value)
		}
		if isJSONNumber(n.Value) {
			b.WriteString(n.Value) // keep the spelling; identity canonicalises it
		} else {
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
	case "!!str":
		s, _ := json.Marshal(n.Value)
		b.Write(s)
	default:
		return fmt.Errorf("line %d: a %s value cannot be written as JSON", n.Line, n.ShortTag())
	}
	return nil
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

func isJSONNumber(s string) bool { return jsonNumber.MatchString(s) }
