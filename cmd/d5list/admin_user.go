package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/store"
)

// adminUser creates or updates an account with a role and, from a file or
// stdin, a password: how the first organiser gets into the browser console.
// The password never goes on the command line, where `ps` and shell
// history would keep it.
func adminUser(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("admin user", stderr)
	data := fs.String("data", envOr("D5LIST_DATA", "./data"), "data folder of the portal")
	name := fs.String("user", "", "user name (created if missing)")
	role := fs.String("role", string(d5list.RoleCompetitor), "competitor, organiser or admin")
	passwordFile := fs.String("password-file", "", "read the password from the first line of this file; - reads stdin")
	org := fs.String("organisation", "", "confirm the account as a member of this organisation")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *name == "" {
		return fmt.Errorf("admin user: --user is required")
	}
	r := d5list.Role(*role)
	if !r.Valid() || r == d5list.RolePublic {
		return fmt.Errorf("admin user: --role must be competitor, organiser or admin, got %q", *role)
	}
	var password string
	if *passwordFile != "" {
		var err error
		if password, err = readPassword(*passwordFile); err != nil {
			return fmt.Errorf("admin user: --password-file: %w", err)
		}
		if len(password) < store.MinPasswordLen {
			return fmt.Errorf("admin user: --password-file %s: the password is shorter than %d characters", *passwordFile, store.MinPasswordLen)
		}
	}
	db, err := store.Open(ctx, *data)
	if err != nil {
		return err
	}
	defer db.Close()
	u, err := db.EnsureUser(ctx, *name, r)
	if err != nil {
		return err
	}
	if password != "" {
		if err := db.SetPassword(ctx, u.ID, password); err != nil {
			return err
		}
	}
	if *org != "" {
		if err := db.SetOrganisation(ctx, u.ID, *org); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "user %s (id %d) is %s%s%s\n", u.Name, u.ID, u.Role,
		map[bool]string{true: "; password set", false: ""}[password != ""],
		map[bool]string{true: "; confirmed member of " + d5list.CleanOrganisation(*org), false: ""}[*org != ""])
	return nil
}

func readPassword(path string) (string, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
