// Command peerbench replays generated captures with redeliver and with the
// hand-written Node.js peer (docs/peer), alternating, and prints the medians
// and the ratios. make bench runs it; see docs/performance.md.
//
//	peerbench -peer DIR -redeliver BIN [-n 300000] [-rounds 3] [-ids uuid,sequential] [-db memory,file]
//	peerbench capture -ids uuid -n 300000 -o FILE
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/redeliver/redeliver/pkg/bench"
)

const howToGetPeer = `the comparison needs the Node.js peer installed outside the repository:
  cp -r docs/peer /some/dir && (cd /some/dir && npm install)
then: make bench PEER=/some/dir`

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "peerbench:", err)
		if errors.Is(err, bench.ErrNoPeer) {
			fmt.Fprintln(os.Stderr, howToGetPeer)
		}
		os.Exit(2)
	}
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "capture" {
		return capture(args[1:])
	}
	fs := flag.NewFlagSet("peerbench", flag.ContinueOnError)
	c := bench.Compare{Out: os.Stdout}
	fs.StringVar(&c.Peer, "peer", "", "folder of peer.js with its node_modules")
	fs.StringVar(&c.Redeliver, "redeliver", "bin/redeliver", "the redeliver binary")
	fs.StringVar(&c.Node, "node", "node", "the node binary")
	fs.StringVar(&c.Dir, "dir", "", "where captures and databases go (default: a new temporary folder)")
	fs.IntVar(&c.Lines, "n", 300000, "lines per capture")
	fs.IntVar(&c.Rounds, "rounds", 3, "alternating rounds")
	ids := fs.String("ids", "uuid,sequential", "capture id shapes, in order")
	modes := fs.String("db", "memory,file", "databases, in order")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.Peer == "" {
		return fmt.Errorf("no -peer folder: %w", bench.ErrNoPeer)
	}
	if c.Lines < 1 || c.Rounds < 1 {
		return fmt.Errorf("-n and -rounds must be positive")
	}
	for _, s := range strings.Split(*ids, ",") {
		id, err := bench.ParseIDs(s)
		if err != nil {
			return err
		}
		c.IDs = append(c.IDs, id)
	}
	for _, s := range strings.Split(*modes, ",") {
		switch m := bench.Mode(s); m {
		case bench.Memory, bench.File:
			c.Modes = append(c.Modes, m)
		default:
			return fmt.Errorf("unknown -db %q (want memory or file)", s)
		}
	}
	if c.Dir == "" {
		dir, err := os.MkdirTemp("", "peerbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		c.Dir = dir
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	results, err := c.Do(ctx)
	if err != nil {
		return err
	}
	bench.WriteTable(os.Stdout, c.Lines, c.Rounds, results)
	return nil
}

func capture(args []string) error {
	fs := flag.NewFlagSet("capture", flag.ContinueOnError)
	n := fs.Int("n", 300000, "lines")
	ids := fs.String("ids", "uuid", "uuid or sequential")
	seed := fs.Uint64("seed", 1, "seed")
	out := fs.String("o", "", "output file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	id, err := bench.ParseIDs(*ids)
	if err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("capture needs -o FILE")
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	err = bench.WriteCapture(f, *n, *seed, id)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
