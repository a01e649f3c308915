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

// VersionOptions are what redeliver version needs: it has no flags.
type VersionOptions struct {
	IO *Streams
}

// NewCmdVersion builds redeliver version on the given streams. Its RunE
// calls runF with a VersionOptions, or, when runF is nil, prints the
// version line.
func NewCmdVersion(s *Streams, runF func(*VersionOptions) error) *cobra.Command {
	o := &VersionOptions{IO: s}
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: ran(func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o)
			}
			return runVersion(o)
		}),
	}
}

// runVersion prints the version line.
func runVersion(o *VersionOptions) error {
	fmt.Fprintln(o.IO.Out, versionLine())
	return nil
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
