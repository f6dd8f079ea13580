package main

import (
	"flag"
	"io"
	"strings"
)

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("d5list "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseInterleaved parses flags that may come before or after the
// positional arguments (`d5list pack DIR -o x` and `d5list pack -o x DIR`).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		if strings.HasPrefix(args[0], "-") && args[0] != "-" {
			continue
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}
