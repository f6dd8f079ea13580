package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/store"
)

func TestAdminUser(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("correct horse battery\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(ctx, []string{"admin", "user", "--data", data, "--user", "olga", "--role", "organiser", "--password-file", pw}, &out, io.Discard); err != nil {
		t.Fatalf("admin user: %v", err)
	}
	if !strings.Contains(out.String(), "olga") || strings.Contains(out.String(), "horse") {
		t.Errorf("output %q: want the user named and the password not echoed", out.String())
	}
	db, err := store.Open(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	u, err := db.Login(ctx, "olga", "correct horse battery")
	if err != nil {
		t.Fatalf("the organiser cannot log in with the password set: %v", err)
	}
	if u.Role != d5list.RoleOrganiser {
		t.Errorf("role %s, want organiser", u.Role)
	}
	if _, err := db.Login(ctx, "olga", "correct horse battery\n"); err == nil {
		t.Error("the file's newline became part of the password")
	}
	db.Close()

	// Demoted without touching the password.
	if err := run(ctx, []string{"admin", "user", "--data", data, "--user", "olga", "--role", "competitor"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	db, err = store.Open(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if u, err := db.Login(ctx, "olga", "correct horse battery"); err != nil || u.Role != d5list.RoleCompetitor {
		t.Errorf("after the role change: %v, %+v; want a competitor who still logs in", err, u)
	}

	short := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(short, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--user", "x", "--role", "public"}, "--role"},
		{[]string{"--role", "organiser"}, "--user"},
		{[]string{"--user", "x", "--password-file", short}, "shorter than"},
		{[]string{"--user", "x", "--password-file", filepath.Join(data, "missing")}, "--password-file"},
	} {
		err := run(ctx, append([]string{"admin", "user", "--data", data}, tc.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("admin user %v: got %v, want an error mentioning %s", tc.args, err, tc.want)
		}
	}
}
