package main

import (
	"context"
	"fmt"
	"io"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/store"
)

func adminCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: d5list admin token --data DIR --user NAME --role competitor|organiser|admin\n       d5list admin user --data DIR --user NAME --role ROLE [--password-file FILE|-] [--organisation ORG]\n       d5list admin runner-token|runner-revoke --data DIR --name NAME\n       d5list admin backup --data DIR -o FILE\n       d5list admin prune-logs --data DIR --days N\n       d5list admin seed-synthetic --data DIR [--submissions 100000] [--benchmark ID] [--systems 1000]\n       d5list admin benchmarks import --data DIR FILE|-\n       d5list admin benchmarks export --data DIR [--own]")
	}
	switch args[0] {
	case "token":
		fs := newFlags("admin token", stderr)
		data := fs.String("data", envOr("D5LIST_DATA", "./data"), "data folder of the portal")
		user := fs.String("user", "", "user name (created if missing)")
		role := fs.String("role", string(d5list.RoleCompetitor), "competitor, organiser or admin")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *user == "" {
			return fmt.Errorf("admin token: --user is required")
		}
		r := d5list.Role(*role)
		if !r.Valid() || r == d5list.RolePublic {
			return fmt.Errorf("admin token: --role must be competitor, organiser or admin, got %q", *role)
		}
		db, err := store.Open(ctx, *data)
		if err != nil {
			return err
		}
		defer db.Close()
		u, err := db.EnsureUser(ctx, *user, r)
		if err != nil {
			return err
		}
		tok, err := db.CreateToken(ctx, u.ID, "cli")
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, tok)
		return nil
	case "user":
		return adminUser(ctx, args[1:], stdout, stderr)
	case "backup":
		return adminBackup(ctx, args[1:], stdout, stderr)
	case "runner-token", "runner-revoke":
		return adminRunnerToken(ctx, args[0], args[1:], stdout, stderr)
	case "seed-synthetic":
		return adminSeedSynthetic(ctx, args[1:], stdout, stderr)
	case "prune-logs":
		return adminPruneLogs(ctx, args[1:], stdout, stderr)
	case "benchmarks":
		return adminBenchmarks(ctx, args[1:], stdout, stderr)
	}
	return fmt.Errorf("admin: unknown command %q (token, user, runner-token, runner-revoke, backup, prune-logs, seed-synthetic, benchmarks)", args[0])
}

// adminRunnerToken prints a new runner token for --name, or revokes every
// token of that name.
func adminRunnerToken(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("admin "+cmd, stderr)
	data := fs.String("data", envOr("D5LIST_DATA", "./data"), "data folder of the portal")
	name := fs.String("name", "", "the runner machine's name (letters, digits, - _ . / : @)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *name == "" {
		return fmt.Errorf("admin %s: --name is required", cmd)
	}
	db, err := store.Open(ctx, *data)
	if err != nil {
		return err
	}
	defer db.Close()
	if cmd == "runner-revoke" {
		return db.RevokeRunnerToken(ctx, *name)
	}
	tok, err := db.CreateRunnerToken(ctx, *name)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	return nil
}
