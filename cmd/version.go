package cmd

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and commit are set at build time (make build does):
// -ldflags "-X github.com/redeliver/redeliver/cmd.version=v1.2.3 -X github.com/redeliver/redeliver/cmd.commit=abc123".
var (
	version = "dev"
	commit  = ""
)

func newVersionCmd(s *Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: ran(func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(s.Out, versionLine())
			return nil
		}),
	}
}

// versionLine is what version and --version print.
func versionLine() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return describeBuild(version, commit, info)
}

// describeBuild names the build: the version (set at build time, else the
// module's, for go install), and the commit (set at build time, else the
// VCS stamp Go records when it builds from a clone, marked -dirty when the
// tree had changes). A commit nobody recorded is left out, not "unknown".
func describeBuild(v, rev string, info *debug.BuildInfo) string {
	modified := false
	if info != nil {
		if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, kv := range info.Settings {
			switch kv.Key {
			case "vcs.revision":
				if rev == "" {
					rev = kv.Value
				}
			case "vcs.modified":
				modified = kv.Value == "true"
			}
		}
	}
	if rev == "" {
		return fmt.Sprintf("redeliver %s (%s)", v, runtime.Version())
	}
	if modified {
		rev += "-dirty"
	}
	return fmt.Sprintf("redeliver %s (commit %s, %s)", v, rev, runtime.Version())
}
