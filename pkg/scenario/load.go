package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	goyaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
	"go.yaml.in/yaml/v3"
)

// MaxConcurrent is the most workers one step may start at once.
const MaxConcurrent = 64

// MaxTimes is the most deliveries one step may repeat.
const MaxTimes = 100000

// maxFileSize bounds what the loader reads: a scenario is written by hand.
const maxFileSize = 4 << 20

// LoadFile reads and validates one scenario file. A file with mistakes
// returns Errors listing all of them.
func LoadFile(path string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(src) > maxFileSize {
		return nil, Errors{errorf(Pos{File: path}, "the file is larger than %d MiB; a scenario file is written by hand", maxFileSize>>20)}
	}
	return Load(path, src)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Load parses and validates a scenario from src; file names it in errors.
func Load(file string, src []byte) (*Scenario, error) { return load(file, src, false) }

// LoadTarget parses and validates a target file: version, target and
// effects, without checks (redeliver replay --target).
func LoadTarget(file string, src []byte) (*Scenario, error) { return load(file, src, true) }

func load(file string, src []byte, targetFile bool) (*Scenario, error) {
	if e := notText(file, src); e != nil {
		return nil, Errors{e}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Errors{errorf(Pos{File: file, Line: 1, Col: 1}, "the file is empty; expected a scenario starting with \"version: 1\"")}
		}
		return nil, Errors{syntaxError(file, src, err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, Errors{errorf(pos(file, &extra), "a second YAML document starts here; a scenario file holds one document")}
	} else if !errors.Is(err, io.EOF) {
		return nil, Errors{syntaxError(file, src, err)}
	}
	l := &loader{file: file, labels: map[string]Pos{}, targetFile: targetFile}
	s := l.scenario(&doc)
	if len(l.errs) > 0 {
		l.errs.Sort()
		return nil, l.errs
	}
	return s, nil
}

// notText finds the first byte of src that cannot be in a YAML text file
// (invalid UTF-8, a control character other than tab, newline and carriage
// return), so that a binary file is refused at its line and column rather
// than with the YAML parser's sentence without one.
func notText(file string, src []byte) *Error {
	line, col := 1, 1
	for i := 0; i < len(src); {
		r, n := utf8.DecodeRune(src[i:])
		why := ""
		switch {
		case r == utf8.RuneError && n == 1:
			why = fmt.Sprintf("byte 0x%02x is not UTF-8", src[i])
		case r == '\n':
			line, col = line+1, 1
			i += n
			continue
		case r == '\t' || r == '\r' || r == 0x85 || (r == 0xFEFF && i == 0):
		case r < 0x20 || (r >= 0x7f && r < 0xa0):
			why = fmt.Sprintf("control character %U is not allowed in YAML", r)
		}
		if why != "" {
			return errorf(Pos{File: file, Line: line, Col: col}, "%s; a scenario file is YAML text (is this a binary file?)", why)
		}
		col++
		i += n
	}
	return nil
}

// syntaxError places a YAML syntax error. The node parser (go.yaml.in/yaml)
// reports the line where the enclosing collection started, and no column;
// goccy/go-yaml's parser reports the token where the syntax broke, with its
// line and column, so its position and wording are used when it finds the
// error too. The node parser's own message is the fallback.
func syntaxError(file string, src []byte, err error) *Error {
	if p, msg, ok := syntaxPosition(src); ok {
		return errorf(Pos{File: file, Line: p.Line, Col: p.Column}, "invalid YAML: %s", msg)
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	return errorf(Pos{File: file, Line: line}, "invalid YAML: %s", msg)
}

// syntaxPosition parses src with goccy/go-yaml and returns where and why
// it is not YAML. A panic in that parser is not the user's mistake: the
// caller then falls back to the node parser's message.
func syntaxPosition(src []byte) (p *token.Position, msg string, ok bool) {
	defer func() {
		if recover() != nil {
			p, msg, ok = nil, "", false
		}
	}()
	_, err := parser.ParseBytes(src, 0)
	var ye goyaml.Error
	if err == nil || !errors.As(err, &ye) || ye.GetToken() == nil || ye.GetToken().Position == nil || ye.GetToken().Position.Line < 1 {
		return nil, "", false
	}
	msg = ye.GetMessage()
	if strings.Contains(msg, "'\t'") {
		msg = "found a tab character, which cannot start any token; indent with spaces"
	}
	return ye.GetToken().Position, msg, true
}

func pos(file string, n *yaml.Node) Pos { return Pos{File: file, Line: n.Line, Col: n.Column} }

type loader struct {
	file string
	errs Errors
	// dataSize is the size of every event's data so far, aliases expanded.
	dataSize int
	// steps counts the steps so far, aliases expanded.
	steps  int
	labels map[string]Pos // labels defined so far, in file order
	s      *Scenario
	// stateChecks are validated once the handler block is known.
	stateChecks []*State
	// consumerSteps name a consumer, which only consumer-scoped handlers allow.
	consumerSteps []*Step
	faultSteps    []*Step // steps with fail or interleave, checked against the strategy at the end
	// deliverSteps are a target-mode file's, checked once the target is known.
	deliverSteps []deliverStep
	// targetMode is set when the file names a target: deliver steps then
	// expect a consumer's answers, not the built-in handler's outcomes.
	targetMode bool
	// crashSteps kill the started consumer, which needs target start.
	crashSteps []*Step
	// dbURLNode is the first string that uses ${REDELIVER_DB_URL} or
	// ${REDELIVER_JDBC_URL}, dbURLVar which of them.
	dbURLNode *yaml.Node
	dbURLVar  string
	// externalRefs are the ${REDELIVER_<NAME>_URL|ADDR} the file uses,
	// each at its first use: every one must name an external.
	externalRefs map[string]*yaml.Node
	// externalVars are the variables the file's externals declare, read
	// before anything else: any other ${REDELIVER_…} is the environment's.
	externalVars map[string]bool
	// targetFile is set for a --target file: target and effects, no checks.
	targetFile bool
}
