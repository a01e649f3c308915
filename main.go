// Command redeliver proves an event consumer is idempotent.
package main

import (
	"os"

	"github.com/redeliver/redeliver/cmd"
)

func main() {
	os.Exit(cmd.Main())
}
