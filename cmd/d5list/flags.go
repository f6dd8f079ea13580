package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
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

// envDefaults reads D5LIST_* variables as flag defaults. A value that does
// not parse is remembered rather than dropped: silently falling back to
// the built-in default would run the server with a setting the operator
// did not choose (D5LIST_RUNNERS=two meaning 1 runner). err reports every
// bad variable by name once the flags are parsed.
type envDefaults struct{ bad []error }

func (e *envDefaults) lookup(key, want string, parse func(string) error) {
	v, ok := os.LookupEnv(key)
	if !ok {
		return
	}
	if err := parse(v); err != nil {
		e.bad = append(e.bad, fmt.Errorf("environment variable %s=%q: want %s", key, v, want))
	}
}

func (e *envDefaults) Int(key string, def int) int {
	e.lookup(key, "an integer", func(v string) (err error) { def, err = strconv.Atoi(strings.TrimSpace(v)); return })
	return def
}

func (e *envDefaults) Int64(key string, def int64) int64 {
	e.lookup(key, "an integer", func(v string) (err error) {
		def, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return
	})
	return def
}

func (e *envDefaults) Bool(key string, def bool) bool {
	e.lookup(key, "true or false", func(v string) (err error) { def, err = strconv.ParseBool(strings.TrimSpace(v)); return })
	return def
}

func (e *envDefaults) Duration(key string, def time.Duration) time.Duration {
	e.lookup(key, "a duration such as 90s or 2m", func(v string) (err error) {
		def, err = time.ParseDuration(strings.TrimSpace(v))
		return
	})
	return def
}

// err is nil when every variable read parsed.
func (e *envDefaults) err() error { return errors.Join(e.bad...) }
