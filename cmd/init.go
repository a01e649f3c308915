package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/scenarios"
	"github.com/spf13/cobra"
)

func newInitCmd(s *Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a starter set of scenarios (default ./scenarios)",
		Long: `Write a starter set of scenario files into DIR (default ./scenarios): the
fixture, the causes of duplicates, and one scenario per safe strategy, all
passing. Nothing is
overwritten: if any of the files exists, nothing is written.

` + exitHelp,
		Example: `  redeliver init
  redeliver init consumer-tests && redeliver run consumer-tests`,
		Args: cobra.MaximumNArgs(1),
		RunE: ran(func(cmd *cobra.Command, args []string) error {
			dir := "scenarios"
			if len(args) == 1 {
				dir = args[0]
			}
			return writeStarter(s, dir)
		}),
	}
}

func writeStarter(s *Streams, dir string) error {
	var names []string
	err := fs.WalkDir(scenarios.Starter, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, path)
		}
		return err
	})
	if err != nil {
		return err
	}
	for _, n := range names {
		target := filepath.Join(dir, filepath.FromSlash(n))
		if _, err := os.Stat(target); err == nil {
			return problem.Usagef("%s already exists; init writes nothing over existing files (choose another folder)", target)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for _, n := range names {
		data, err := fs.ReadFile(scenarios.Starter, n)
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		// O_EXCL: a file that appeared since the check is still not overwritten.
		f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Fprintf(s.Err, "wrote %s\n", target)
	}
	fmt.Fprintf(s.Err, "run them with: redeliver run %s\n", dir)
	return nil
}
