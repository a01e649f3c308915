package cmd

import (
	"context"

	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/suite"
	"github.com/spf13/cobra"
)

// ValidateOptions are the arguments of redeliver validate.
type ValidateOptions struct {
	IO      *Streams
	Context context.Context

	Paths []string
}

// NewCmdValidate builds redeliver validate on the given streams. Its RunE
// fills a ValidateOptions from the arguments; then it calls runF with it,
// or, when runF is nil, checks the scenario files.
func NewCmdValidate(s *Streams, runF func(*ValidateOptions) error) *cobra.Command {
	o := &ValidateOptions{IO: s}
	return &cobra.Command{
		Use:   "validate [PATH...]",
		Short: "Check scenario files without running them",
		Long: `Check scenario files (and folders of them, default ./scenarios) without
running them. Every mistake of every file is printed as file:line:column and
what was expected. A file with a target and no checks is a --target file
(redeliver replay --target FILE) and is checked as replay reads it.

` + exitHelp,
		Example: `  redeliver validate
  redeliver validate scenarios/seed-fixture.yaml
  redeliver validate target.yaml`,
		RunE: ran(func(cmd *cobra.Command, args []string) error {
			o.Context = cmd.Context()
			o.Paths = args
			if len(o.Paths) == 0 {
				o.Paths = []string{"scenarios"}
			}
			if runF != nil {
				return runF(o)
			}
			return runValidate(o)
		}),
	}
}

// runValidate checks the scenario files and says how many there are.
func runValidate(o *ValidateOptions) error {
	files, err := suite.Collect(o.Paths)
	if err != nil {
		return err
	}
	scenarios, err := suite.LoadAll(o.Context, files)
	if err != nil {
		return err
	}
	checks, targets := 0, 0
	for _, sc := range scenarios {
		checks += len(sc.Checks)
		if sc.TargetFile {
			targets++
		}
	}
	return report.Validated(o.IO.Out, len(scenarios), checks, targets)
}
