// Command d5list is the Deep500 list portal and its command-line tools.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/deep500/d5list/workloads"
)

const usage = `d5list: the Deep500 list portal.

Portal:
  d5list serve   --addr 127.0.0.1:8080 --data ./data [--runners N] [--demo]
  d5list admin   token --data DIR --user NAME --role competitor|organiser|admin
  d5list admin   user --data DIR --user NAME --role ROLE [--password-file FILE|-]
  d5list admin   runner-token|runner-revoke --data DIR --name NAME
  d5list admin   backup --data DIR -o FILE      online backup: database snapshot + blobs, .tar.gz
  d5list admin   prune-logs --data DIR --days N   delete the re-run output of jobs that ended N days ago
  d5list admin   seed-synthetic --data NEWDIR [--submissions 100000]   labelled fake results, for benchmarks
  d5list admin   benchmarks export --data DIR [--own]   print the catalogue as YAML (--own: the portal's own only)
  d5list admin   benchmarks import --data DIR FILE|-   add or replace benchmarks of the portal's own
  d5list healthcheck [--url http://127.0.0.1:8080/healthz]
  d5list runner  --server URL --token d5r_... [--labels k=v,...] [--executor builtin|process|slurm]
                 [--concurrency N] [--work DIR] [--datasets DIR] [--allow-unsandboxed]
                 [--job-memory BYTES] [--job-disk BYTES] [--job-processes N] [--allow-unbounded]

Competitors:
  d5list init    BENCHMARK DIR        write a starter submission folder
  d5list run     [--runs N] DIR       run the recipe as a runner would, into DIR/results
  d5list pack    DIR -o bundle.tar.gz
  d5list check   DIR|BUNDLE [--json]  every check the portal applies on upload
  d5list check   RECIPE [--json]      the FIXED, MUTABLE and METRICS a recipe file holds
  d5list check   --mlperf [--round X.Y] DIR
                                      check and score an MLPerf Training results folder
                                      as MLPerf's own tools would
  d5list submit  DIR|BUNDLE --server URL --token T [--wait]   --wait follows it to the verdict
`

// errSilent marks a failure whose explanation was already printed.
var errSilent = errors.New("")

func main() {
	// Data-parallel workloads re-execute this binary as their workers.
	workloads.ServeWorkerIfAsked()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if err != errSilent {
			fmt.Fprintln(os.Stderr, errorLine(err))
		}
		os.Exit(1)
	}
}

// errorLine is what the command prints for err, named for the program.
func errorLine(err error) string { return "d5list: " + err.Error() }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errSilent
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return serveCmd(ctx, rest, stderr)
	case "admin":
		return adminCmd(ctx, rest, stdout, stderr)
	case "healthcheck":
		return healthcheckCmd(ctx, rest, stdout, stderr)
	case "runner":
		return runnerCmd(ctx, rest, stderr)
	case "init":
		return initCmd(rest, stdout, stderr)
	case "run":
		return runCmd(ctx, rest, stdout, stderr)
	case "pack":
		return packCmd(rest, stdout, stderr)
	case "check":
		return checkCmd(rest, stdout, stderr)
	case "submit":
		return submitCmd(ctx, rest, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}
