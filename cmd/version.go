package cmd

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time: -ldflags "-X github.com/redeliver/redeliver/cmd.version=v1.2.3".
var version = "dev"

func newVersionCmd(s *Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: ran(func(cmd *cobra.Command, args []string) error {
			v, commit := version, "unknown"
			if info, ok := debug.ReadBuildInfo(); ok {
				if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
					v = info.Main.Version
				}
				for _, kv := range info.Settings {
					if kv.Key == "vcs.revision" {
						commit = kv.Value
					}
				}
			}
			fmt.Fprintf(s.Out, "redeliver %s (commit %s, %s)\n", v, commit, runtime.Version())
			return nil
		}),
	}
}
