package cmd

import (
	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/suite"
	"github.com/spf13/cobra"
)

func newValidateCmd(s *Streams) *cobra.Command {
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
			if len(args) == 0 {
				args = []string{"scenarios"}
			}
			files, err := suite.Collect(args)
			if err != nil {
				return err
			}
			scenarios, err := suite.LoadAll(cmd.Context(), files)
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
			return report.Validated(s.Out, len(scenarios), checks, targets)
		}),
	}
}
