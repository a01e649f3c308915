package cmd

import (
	"io"
	"os"

	"github.com/mattn/go-isatty"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/redact"
)

// Streams are where a command reads and writes. Commands never touch
// os.Stdout directly, so tests can hand them buffers and decide whether
// output counts as a terminal.
type Streams struct {
	In     io.Reader
	Out    io.Writer // data: the report
	Err    io.Writer // diagnostics and progress
	OutTTY bool      // Out is a terminal
	ErrTTY bool      // Err is a terminal
	Getenv func(string) string
	// Secrets are the secret values of the configuration the command
	// loaded: every report, annotation and message on Err is written
	// with them masked (nil masks secrets by their form only).
	Secrets *redact.Secrets
}

// mask returns text with every secret masked: the values the
// configuration holds as secrets, and whatever redact.String recognises.
// Everything redeliver prints passes through here.
func (s *Streams) mask(text string) string { return s.Secrets.String(text) }

// System returns the process's own streams.
func System() *Streams {
	return &Streams{
		In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
		OutTTY: isTerminal(os.Stdout), ErrTTY: isTerminal(os.Stderr),
		Getenv:  os.Getenv,
		Secrets: &redact.Secrets{},
	}
}

func isTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// Color decides, once, whether the text report is coloured: never, always,
// or (auto) when FORCE_COLOR asks for it, or when stdout is a terminal and
// NO_COLOR is unset.
func (s *Streams) Color(mode string) (bool, error) {
	switch mode {
	case "never":
		return false, nil
	case "always":
		return true, nil
	case "auto", "":
		if v := s.Getenv("FORCE_COLOR"); v != "" && v != "0" && v != "false" {
			return true, nil
		}
		if s.Getenv("NO_COLOR") != "" {
			return false, nil
		}
		return s.OutTTY, nil
	}
	return false, checkColor(mode)
}

// checkColor refuses a --color other than auto, always and never.
func checkColor(mode string) error {
	switch mode {
	case "never", "always", "auto", "":
		return nil
	}
	return problem.Usagef("--color must be auto, always or never, not %q", mode)
}
