package cmd

import (
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/template"
)

// said is the line of a check whose say: is text without placeholders.
func said(s string) runner.Line { return runner.Line{Say: template.MustParse(s)} }
