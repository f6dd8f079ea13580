package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// A D5LIST_* variable that does not parse stops serve with an error naming
// it, before anything is opened or bound, instead of being replaced by the
// default without a word.
func TestServeRefusesBadEnvironment(t *testing.T) {
	cases := []struct{ key, value, want string }{
		{"D5LIST_RUNNERS", "two", "an integer"},
		{"D5LIST_MAX_UPLOAD", "1GiB", "an integer"},
		{"D5LIST_DEMO", "maybe", "true or false"},
		{"D5LIST_LEASE_TTL", "120", "a duration"},
		{"D5LIST_QUOTA", "", "an integer"},
		{"D5LIST_KEEP_LOGS_DAYS", "90d", "an integer"},
		{"D5LIST_KEEP_LOGS_DAYS", "-1", "a number of days"},
	}
	for _, c := range cases {
		t.Run(c.key+"="+c.value, func(t *testing.T) {
			t.Setenv(c.key, c.value)
			data := t.TempDir()
			var stderr bytes.Buffer
			err := run(context.Background(), []string{"serve", "--data", data, "--addr", "127.0.0.1:0", "--runners", "0"}, &stderr, &stderr)
			if err == nil {
				t.Fatalf("serve with %s=%q started", c.key, c.value)
			}
			for _, part := range []string{c.key, `"` + c.value + `"`, c.want} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not contain %q", err, part)
				}
			}
		})
	}
}

func TestEnvDefaultsParseGoodValues(t *testing.T) {
	t.Setenv("D5LIST_T_INT", " 3 ")
	t.Setenv("D5LIST_T_BOOL", "true")
	t.Setenv("D5LIST_T_DUR", "90s")
	env := &envDefaults{}
	if got := env.Int("D5LIST_T_INT", 1); got != 3 {
		t.Errorf("Int = %d, want 3", got)
	}
	if got := env.Bool("D5LIST_T_BOOL", false); !got {
		t.Error("Bool = false, want true")
	}
	if got := env.Duration("D5LIST_T_DUR", 0); got.Seconds() != 90 {
		t.Errorf("Duration = %s, want 90s", got)
	}
	if got := env.Int64("D5LIST_T_UNSET", 7); got != 7 {
		t.Errorf("unset Int64 = %d, want the default 7", got)
	}
	if err := env.err(); err != nil {
		t.Fatal(err)
	}
}
