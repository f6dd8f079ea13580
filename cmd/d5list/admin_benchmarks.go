package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/store"
	"github.com/deep500/d5list/workloads"
)

// adminBenchmarks is `admin benchmarks import FILE` and `export`: the
// console's benchmark editor from the command line, for an operator who
// keeps the portal's own benchmarks in a file under version control.
func adminBenchmarks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	usage := fmt.Errorf("usage: d5list admin benchmarks import --data DIR FILE|-\n       d5list admin benchmarks export --data DIR [--own]")
	if len(args) == 0 {
		return usage
	}
	fs := newFlags("admin benchmarks "+args[0], stderr)
	data := fs.String("data", envOr("D5LIST_DATA", "./data"), "data folder of the portal")
	own := fs.Bool("own", false, "export: only the portal's own benchmarks, which import reads back (it refuses the built-in ones)")
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return err
	}
	switch {
	case args[0] == "import" && len(pos) == 1:
		return importBenchmarks(ctx, *data, pos[0], stdout)
	case args[0] == "export" && len(pos) == 0:
		return exportBenchmarks(ctx, *data, *own, stdout)
	}
	return usage
}

func importBenchmarks(ctx context.Context, data, file string, stdout io.Writer) error {
	var text []byte
	var err error
	if file == "-" {
		text, err = io.ReadAll(os.Stdin)
	} else {
		text, err = os.ReadFile(file)
	}
	if err != nil {
		return err
	}
	bs, err := catalog.Parse(file, text)
	if err != nil {
		return err
	}
	if len(bs) == 0 {
		return fmt.Errorf("%s: no benchmark in it", file)
	}
	if err := catalog.RefuseBuiltIn(bs); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := catalog.CheckWorkloads(file, bs, workloads.Names()); err != nil {
		return err
	}
	db, err := store.Open(ctx, data)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.UpsertBenchmarks(ctx, bs); err != nil {
		return err
	}
	ids := make([]string, len(bs))
	for i, b := range bs {
		ids[i] = b.ID
	}
	fmt.Fprintf(stdout, "saved %s\n", strings.Join(ids, ", "))
	return nil
}

// exportBenchmarks prints the catalogue the portal ranks, as a catalogue
// list that import and the console read: the built-in benchmarks (which
// serve seeds at every start) and then the portal's own, or with own its
// own only. A new benchmark starts as a copy of one under a new id.
func exportBenchmarks(ctx context.Context, data string, own bool, stdout io.Writer) error {
	db, err := store.Open(ctx, data)
	if err != nil {
		return err
	}
	defer db.Close()
	stored, err := db.Benchmarks(ctx)
	if err != nil {
		return err
	}
	builtIn, err := catalog.Benchmarks()
	if err != nil {
		return err
	}
	head := "# The benchmarks of the portal at " + data + " that are not built in.\n"
	var bs []d5list.Benchmark
	if !own {
		head = "# The catalogue of the portal at " + data + ": first the built-in benchmarks, which it seeds from\n" +
			"# catalog/benchmarks.yaml at every start and import refuses, then its own. A copy under a new id is a new benchmark.\n"
		bs = builtIn
	}
	for _, b := range stored {
		if _, err := catalog.Lookup(builtIn, b.ID); err != nil {
			bs = append(bs, b)
		}
	}
	out, err := yaml.Marshal(bs)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, head+string(out))
	return err
}
